// alltoall: in x [world*M, N] -> out y [world*M, N]; y chunk j on rank r = x chunk r on rank j.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(alltoall);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int w, int) {
  return {{{"x", {w * d.at("M"), d.at("N")}}}, {{"y", {w * d.at("M"), d.at("N")}}}};
}
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double s = double(n) * d.at("M") * d.at("N") * es;
  return {s, BusFactorGather(n), BusFactorGather(n) * s, 2 * s, 0};
}
}  // namespace
PKF_DEFINE_PROBLEM(alltoall) = {
    .name = "alltoall", .category = "collective", .dims = {"M", "N"},
    .tiny = {{"M", 3}, {"N", 37}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 2048}, {"N", 8192}},
    .validate = RequirePositive, .spec = Spec, .tolerance = ExactTolerance, .cost = CostOf,
    .host_reference = pkf_ref_alltoall_run, .pkb_id = 8};
}  // namespace pkforge::kernels
