// zero1 (ParallelKernelBench 41, zero1_optimizer_shard): the ddp step with the Adam state sharded: gradients all-reduced (mean), rank r updates shard r of the flat parameters, the updated shards all-gathered.
// Shapes, input ranges, tolerance, cost: common/mlp_adam_spec.h.
#include "kernels/problems/common/mlp_adam_spec.h"

PKF_DECLARE_HOST_REFERENCE(zero1);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int w, int r) { return MlpAdamSpec(d, w, r, /*sharded=*/true); }
Cost CostOf(const Dims& d, int n, int64_t es) { return MlpAdamCost(d, n, es, 1); }
}  // namespace
PKF_DEFINE_PROBLEM(zero1) = {
    .name = "zero1", .category = "training", .dims = {"M", "N"},
    .tiny = {{"M", 24}, {"N", 32}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 65536}, {"N", 1024}},  // the batch grows: PKB clamps din/H/dout
    // f16 is left out: Adam's second moment of these gradients (~1e-4) sits
    // near f16's subnormal range, where one ulp is a large fraction of it.
    .dtypes = {PKF_BF16, PKF_F32},
    .validate = ValidateShardedMlp, .spec = Spec, .tolerance = MlpAdamTolerance, .cost = CostOf,
    .host_reference = pkf_ref_zero1_run, .pkb_id = 41};
}  // namespace pkforge::kernels
