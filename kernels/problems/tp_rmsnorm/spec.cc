// tp_rmsnorm: x_r [M, H/world], w_r [H/world] (this rank's shard of the weight)
// -> y_r [M, H/world] = x_r * rsqrt(mean over the FULL row of x^2 + 1e-6) * w_r.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(tp_rmsnorm);

namespace pkforge::kernels {
namespace {
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  return RequireDivisible(d, "H", w);
}
RankSpec Spec(const Dims& d, int w, int) {
  return {{{"x", {d.at("M"), d.at("H") / w}}, {"w", {d.at("H") / w}}},
          {{"y", {d.at("M"), d.at("H") / w}}}};
}
Tolerance Tol(const Dims&, int, pkf_dtype dt) { return ReductionTolerance(dt, 1, 2.0); }
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double m = d.at("M"), h = d.at("H");
  return {m * 4, BusFactorAllreduce(n), BusFactorAllreduce(n) * m * 4,
          (2 * m * h / n + h / n) * es, 4 * m * h / n};
}
}  // namespace
const Problem kTpRmsnormProblem = {
    .name = "tp_rmsnorm", .category = "tp-fusion", .dims = {"M", "H"},
    .tiny = {{"M", 5}, {"H", 48}}, .default_size = {{"M", 16384}, {"H", 8192}},
    .validate = Validate, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_tp_rmsnorm_run};
}  // namespace pkforge::kernels
