// fused_adam_allgather (ParallelKernelBench 43, fused_adam_grad_unshard_allgather):
// grad and master weight shards [P] per rank -> one Adam step on the shard
// (PKB's zero optimizer state, step 1) and the all-gathered updated weights
// [world*P] on every rank, plus the updated state shards [P].
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(fused_adam_allgather);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int w, int) {
  const int64_t p = d.at("P");
  return {{{"grad", {p}}, {"master", {p}}}, {{"params", {w * p}}, {"exp_avg", {p}}, {"exp_avg_sq", {p}}}};
}
// Element-wise in f32, rounded once per output: one or two ulps of the dtype
// (rtol); the absolute floor (base * lr) covers values near zero, e.g. the
// second moment 0.001 * g^2 of a small gradient in f16's subnormal range.
Tolerance Tol(const Dims&, int, pkf_dtype dt) { return {BaseTolerance(dt) * 1e-3, BaseTolerance(dt)}; }
// The all-gather of the updated weights; read grad and master, write the
// states and the gathered weights.
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double p = d.at("P"), s = n * p * es;
  return {s, BusFactorGather(n), BusFactorGather(n) * s, (4 * p + n * p) * es, 12 * p};
}
}  // namespace
PKF_DEFINE_PROBLEM(fused_adam_allgather) = {
    .name = "fused_adam_allgather", .category = "training", .dims = {"P"},
    .tiny = {{"P", 37}}, .default_size = {{"P", 4096}}, .large = {{"P", 4194304}},
    .validate = RequirePositive, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_fused_adam_allgather_run, .pkb_id = 43};
}  // namespace pkforge::kernels
