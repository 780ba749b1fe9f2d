// gemv_decode (ParallelKernelBench 46, gemv_decode): hidden [T, H] replicated,
// weight [V, H] and bias [V] per rank (rows [r*V, (r+1)*V) of a vocab-parallel
// projection) -> logits [T, world*V] on every rank, column block j =
// hidden @ weight_j^T + bias_j.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(gemv_decode);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int w, int) {
  const int64_t t = d.at("T"), h = d.at("H"), v = d.at("V");
  return {{{"hidden", {t, h}, true}, {"weight", {v, h}}, {"bias", {v}}}, {{"logits", {t, w * v}}}};
}
// A dot product of H terms of magnitude ~1 (as gemm_allgather with K = H).
Tolerance Tol(const Dims& d, int, pkf_dtype dt) {
  return ReductionTolerance(dt, 1, std::sqrt(double(d.at("H"))) / 2);
}
// The all-gather moves the T x world*V logits; the weight shard dominates HBM.
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double t = d.at("T"), h = d.at("H"), v = d.at("V"), all = t * n * v;
  return {all * es, BusFactorGather(n), BusFactorGather(n) * all * es,
          (t * h + v * h + v + all) * es, 2 * t * v * h};
}
}  // namespace
PKF_DEFINE_PROBLEM(gemv_decode) = {
    .name = "gemv_decode", .category = "tp-fusion", .dims = {"T", "H", "V"},
    .tiny = {{"T", 2}, {"H", 8}, {"V", 5}},
    .default_size = {{"T", 1}, {"H", 1024}, {"V", 1024}},
    .large = {{"T", 8}, {"H", 4096}, {"V", 16384}},
    .validate = RequirePositive, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_gemv_decode_run, .pkb_id = 46};
}  // namespace pkforge::kernels
