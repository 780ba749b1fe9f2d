// ddp (ParallelKernelBench 40, ddp): one data-parallel MLP training step; rank 0's parameters and Adam state broadcast, gradients all-reduced (mean), the same Adam step on every rank.
// Shapes, input ranges, tolerance, cost: common/mlp_adam_spec.h.
#include "kernels/problems/common/mlp_adam_spec.h"

PKF_DECLARE_HOST_REFERENCE(ddp);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int w, int r) { return MlpAdamSpec(d, w, r, /*sharded=*/false); }
Cost CostOf(const Dims& d, int n, int64_t es) { return MlpAdamCost(d, n, es, 0); }
}  // namespace
PKF_DEFINE_PROBLEM(ddp) = {
    .name = "ddp", .category = "training", .dims = {"M", "N"},
    .tiny = {{"M", 24}, {"N", 32}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 65536}, {"N", 1024}},  // the batch grows: PKB clamps din/H/dout
    // f16 is left out: Adam's second moment of these gradients (~1e-4) sits
    // near f16's subnormal range, where one ulp is a large fraction of it.
    .dtypes = {PKF_BF16, PKF_F32},
    .validate = RequirePositive, .spec = Spec, .tolerance = MlpAdamTolerance, .cost = CostOf,
    .host_reference = pkf_ref_ddp_run, .pkb_id = 40};
}  // namespace pkforge::kernels
