// allreduce: in x [M, N] per rank -> out y [M, N] = elementwise sum over ranks.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(allreduce);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int, int) {
  return {{{"x", {d.at("M"), d.at("N")}}}, {{"y", {d.at("M"), d.at("N")}}}};
}
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double s = double(d.at("M")) * d.at("N") * es;
  return {s, BusFactorAllreduce(n), BusFactorAllreduce(n) * s, 2 * s,
          double(d.at("M")) * d.at("N") * (n - 1) / n};
}
}  // namespace
PKF_DEFINE_PROBLEM(allreduce) = {
    .name = "allreduce", .category = "collective", .dims = {"M", "N"},
    .tiny = {{"M", 3}, {"N", 37}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 8192}, {"N", 8192}},
    .validate = RequirePositive, .spec = Spec, .tolerance = WorldSumTolerance, .cost = CostOf,
    .host_reference = pkf_ref_allreduce_run, .pkb_id = 1};
}  // namespace pkforge::kernels
