// reducescatter: in x [world*M, N] -> out y [M, N] on rank r = sum over ranks of chunk r.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(reducescatter);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int w, int) {
  return {{{"x", {w * d.at("M"), d.at("N")}}}, {{"y", {d.at("M"), d.at("N")}}}};
}
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double s = double(d.at("M")) * d.at("N") * es;  // output bytes
  return {n * s, BusFactorGather(n), (n - 1) * s, n * s + s, double(d.at("M")) * d.at("N") * (n - 1)};
}
}  // namespace
PKF_DEFINE_PROBLEM(reducescatter) = {
    .name = "reducescatter", .category = "collective", .dims = {"M", "N"},
    .tiny = {{"M", 3}, {"N", 37}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 2048}, {"N", 8192}},
    .validate = RequirePositive, .spec = Spec, .tolerance = WorldSumTolerance, .cost = CostOf,
    .host_reference = pkf_ref_reducescatter_run, .pkb_id = 7};
}  // namespace pkforge::kernels
