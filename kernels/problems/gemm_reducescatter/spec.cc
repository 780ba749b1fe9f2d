// gemm_reducescatter: A_r [M, K/world], B_r [K/world, N] per rank ->
// y [M/world, N] on rank r = row block r of sum over ranks of A_r @ B_r.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(gemm_reducescatter);

namespace pkforge::kernels {
namespace {
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  RETURN_IF_ERROR(RequireDivisible(d, "M", w));
  return RequireDivisible(d, "K", w);
}
RankSpec Spec(const Dims& d, int w, int) {
  return {{{"A", {d.at("M"), d.at("K") / w}}, {"B", {d.at("K") / w, d.at("N")}}},
          {{"y", {d.at("M") / w, d.at("N")}}}};
}
Tolerance Tol(const Dims& d, int w, pkf_dtype dt) {
  return ReductionTolerance(dt, w, std::sqrt(double(d.at("K"))) / 2);
}
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double m = d.at("M"), nn = d.at("N"), k = d.at("K");
  return {m * nn * es, BusFactorGather(n), BusFactorGather(n) * m * nn * es,
          (m * k / n + k / n * nn + m * nn + m * nn / n) * es, 2 * m * nn * k / n};
}
}  // namespace
PKF_DEFINE_PROBLEM(gemm_reducescatter) = {
    .name = "gemm_reducescatter", .category = "tp-fusion", .dims = {"M", "N", "K"},
    .tiny = {{"M", 24}, {"N", 16}, {"K", 48}},
    .default_size = {{"M", 1024}, {"N", 1024}, {"K", 512}},
    .large = {{"M", 8192}, {"N", 8192}, {"K", 8192}},
    .validate = Validate, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_gemm_reducescatter_run, .pkb_id = 16};
}  // namespace pkforge::kernels
