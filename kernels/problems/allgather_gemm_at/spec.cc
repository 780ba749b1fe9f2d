// allgather_gemm_at (ParallelKernelBench 11): A_r [M, K/world] and B_r [K, N]
// per rank -> y_r [M, N] = allgather(A along K) @ B_r on rank r. PKB gathers A
// transposed (A^T blocks are contiguous rows of A_full^T) and multiplies
// B^T @ A_full^T; the result is the same product.
// Validation, shapes, tolerance, cost: common/allgather_gemm_spec.h.
#include "kernels/problems/common/allgather_gemm_spec.h"

PKF_DECLARE_HOST_REFERENCE(allgather_gemm_at);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int w, int) {
  return AllgatherGemmSpec(d, w, /*b_replicated=*/false);
}
}  // namespace
PKF_DEFINE_PROBLEM(allgather_gemm_at) = {
    .name = "allgather_gemm_at", .category = "tp-fusion", .dims = {"M", "N", "K"},
    .tiny = {{"M", 8}, {"N", 16}, {"K", 48}},
    .default_size = {{"M", 1024}, {"N", 1024}, {"K", 512}},
    .large = {{"M", 8192}, {"N", 8192}, {"K", 8192}},
    .validate = AllgatherGemmValidate, .spec = Spec, .tolerance = AllgatherGemmTolerance,
    .cost = AllgatherGemmCost,
    .host_reference = pkf_ref_allgather_gemm_at_run, .pkb_id = 11};
}  // namespace pkforge::kernels
