// allgather_gemm_at (ParallelKernelBench 11): A_r [M, K/world] and B_r [K, N]
// per rank -> y_r [M, N] = allgather(A along K) @ B_r on rank r. PKB gathers A
// transposed (A^T blocks are contiguous rows of A_full^T) and multiplies
// B^T @ A_full^T; the result is the same product.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(allgather_gemm_at);

namespace pkforge::kernels {
namespace {
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  return RequireDivisible(d, "K", w);
}
RankSpec Spec(const Dims& d, int w, int) {
  return {{{"A", {d.at("M"), d.at("K") / w}}, {"B", {d.at("K"), d.at("N")}}},
          {{"y", {d.at("M"), d.at("N")}}}};
}
Tolerance Tol(const Dims& d, int, pkf_dtype dt) {
  return ReductionTolerance(dt, 1, std::sqrt(double(d.at("K"))) / 2);
}
// The all-gather moves the M x K activation; the GEMM is the full M x N x K.
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double m = d.at("M"), nn = d.at("N"), k = d.at("K");
  return {m * k * es, BusFactorGather(n), BusFactorGather(n) * m * k * es,
          (m * k + k * nn + m * nn) * es, 2 * m * nn * k};
}
}  // namespace
PKF_DEFINE_PROBLEM(allgather_gemm_at) = {
    .name = "allgather_gemm_at", .category = "tp-fusion", .dims = {"M", "N", "K"},
    .tiny = {{"M", 8}, {"N", 16}, {"K", 48}},
    .default_size = {{"M", 1024}, {"N", 1024}, {"K", 512}},
    .large = {{"M", 8192}, {"N", 8192}, {"K", 8192}},
    .validate = Validate, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_allgather_gemm_at_run, .pkb_id = 11};
}  // namespace pkforge::kernels
