// tp_rmsnorm: x_r [M, HL], w_r [HL] per rank (rank r's columns of a hidden
// dimension H = world*HL, as in ParallelKernelBench)
// -> y_r [M, HL] = x_r * rsqrt(mean over the FULL row of x^2 + 1e-5) * w_r.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(tp_rmsnorm);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int, int) {
  return {{{"x", {d.at("M"), d.at("HL")}}, {"w", {d.at("HL")}}}, {{"y", {d.at("M"), d.at("HL")}}}};
}
// rtol = base, atol = base / 4: one rounding of a value of magnitude ~1 (a
// correct implementation differs from the oracle by at most ~1 ulp of the
// dtype). atol = 2 * base (before) accepted f16 outputs of bf16 precision
// (kernels_suite_test, coarse-precision policy).
Tolerance Tol(const Dims&, int, pkf_dtype dt) { return {BaseTolerance(dt) / 4, BaseTolerance(dt)}; }
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double m = d.at("M"), hl = d.at("HL");
  return {m * 4, BusFactorAllreduce(n), BusFactorAllreduce(n) * m * 4, (2 * m * hl + hl) * es,
          4 * m * hl};
}
}  // namespace
PKF_DEFINE_PROBLEM(tp_rmsnorm) = {
    .name = "tp_rmsnorm", .category = "tp-fusion", .dims = {"M", "HL"},
    .tiny = {{"M", 5}, {"HL", 12}}, .default_size = {{"M", 1024}, {"HL", 1024}},
    .large = {{"M", 16384}, {"HL", 4096}},
    .validate = RequirePositive, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_tp_rmsnorm_run, .pkb_id = 18};
}  // namespace pkforge::kernels
