// allgather: in x [M, N] per rank -> out y [world*M, N], rank j's x at rows j*M.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(allgather);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int w, int) {
  return {{{"x", {d.at("M"), d.at("N")}}}, {{"y", {w * d.at("M"), d.at("N")}}}};
}
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double s = double(d.at("M")) * d.at("N") * es;
  return {n * s, BusFactorGather(n), (n - 1) * s, s + n * s, 0};
}
}  // namespace
PKF_DEFINE_PROBLEM(allgather) = {
    .name = "allgather", .category = "collective", .dims = {"M", "N"},
    .tiny = {{"M", 3}, {"N", 37}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 2048}, {"N", 8192}},
    .validate = RequirePositive, .spec = Spec, .tolerance = ExactTolerance, .cost = CostOf,
    .host_reference = pkf_ref_allgather_run, .pkb_id = 2};
}  // namespace pkforge::kernels
