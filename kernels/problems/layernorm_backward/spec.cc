// layernorm_backward (ParallelKernelBench 9): X_hat, dY [M, N] per rank (data
// parallel: each rank's rows of the batch) -> d_gamma = sum over ranks and rows
// of dY * X_hat, d_beta = sum over ranks and rows of dY, both [N] on every rank.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(layernorm_backward);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int, int) {
  const std::vector<int64_t> x = {d.at("M"), d.at("N")};
  return {{{"X_hat", x}, {"dY", x}}, {{"d_gamma", {d.at("N")}}, {"d_beta", {d.at("N")}}}};
}
// Column sums of world*M values of magnitude < 1: PyTorch rounds each rank's
// column sums to the dtype and all-reduces in the dtype, so the error grows
// like a GEMM's with K = M plus the sum over ranks.
Tolerance Tol(const Dims& d, int w, pkf_dtype dt) {
  return ReductionTolerance(dt, w, std::sqrt(double(d.at("M"))) / 2);
}
// Two all-reduces of N elements each; the inputs are read once.
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double m = d.at("M"), nn = d.at("N"), s = 2 * nn * es;
  return {s, BusFactorAllreduce(n), BusFactorAllreduce(n) * s, (2 * m * nn + 2 * nn) * es, 3 * m * nn};
}
}  // namespace
PKF_DEFINE_PROBLEM(layernorm_backward) = {
    .name = "layernorm_backward", .category = "training", .dims = {"M", "N"},
    .tiny = {{"M", 5}, {"N", 37}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 16384}, {"N", 8192}},
    .validate = RequirePositive, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_layernorm_backward_run, .pkb_id = 9};
}  // namespace pkforge::kernels
