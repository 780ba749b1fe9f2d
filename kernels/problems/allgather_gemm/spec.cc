// allgather_gemm: A_r [M, K/world] per rank, B [K, N] replicated ->
// y [M, N] = allgather(A along K) @ B on every rank.
// Validation, shapes, tolerance, cost: common/allgather_gemm_spec.h.
#include "kernels/problems/common/allgather_gemm_spec.h"

PKF_DECLARE_HOST_REFERENCE(allgather_gemm);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int w, int) {
  return AllgatherGemmSpec(d, w, /*b_replicated=*/true);
}
}  // namespace
PKF_DEFINE_PROBLEM(allgather_gemm) = {
    .name = "allgather_gemm", .category = "tp-fusion", .dims = {"M", "N", "K"},
    .tiny = {{"M", 8}, {"N", 16}, {"K", 48}},
    .default_size = {{"M", 1024}, {"N", 1024}, {"K", 512}},
    .large = {{"M", 8192}, {"N", 8192}, {"K", 8192}},
    .validate = AllgatherGemmValidate, .spec = Spec, .tolerance = AllgatherGemmTolerance,
    .cost = AllgatherGemmCost,
    .host_reference = pkf_ref_allgather_gemm_run, .pkb_id = 12};
}  // namespace pkforge::kernels
