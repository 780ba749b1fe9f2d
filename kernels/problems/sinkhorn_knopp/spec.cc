// sinkhorn_knopp (ParallelKernelBench 80, dinov2_distributed_sinkhorn_knopp):
// teacher logits [B, NP] per rank (B samples, NP prototypes) -> the balanced
// soft assignment [B, NP]: q = exp(x / 0.07) over the global batch, divided by
// its total mass, then 3 Sinkhorn iterations (prototype rows normalized over
// the global batch by an all-reduce, sample columns normalized locally).
#include <algorithm>

#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(sinkhorn_knopp);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int, int) {
  const std::vector<int64_t> x = {d.at("B"), d.at("NP")};
  return {{{"teacher_output", x}}, {{"q", x}}};
}
// A chain of f32 exponentials, sums and divisions: the sums over NP or the
// global batch may be taken in any order, a few f32 ulps times their depth
// (8e-5); in f16/bf16 the final rounding (base), and f16's subnormals below
// 6e-5 (an absolute 1e-7, about two subnormal steps).
Tolerance Tol(const Dims&, int, pkf_dtype dt) {
  return {dt == PKF_F16 ? 1e-7 : 0.0, std::max(8e-5, BaseTolerance(dt))};
}
// 1 + 3 all-reduces (total mass, then NP prototype sums per iteration); the
// matrix is read once and written once at least.
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double b = d.at("B"), np = d.at("NP"), s = (3 * np + 1) * 4;
  return {s, BusFactorAllreduce(n), BusFactorAllreduce(n) * s, 2 * b * np * es, 12 * b * np};
}
}  // namespace
PKF_DEFINE_PROBLEM(sinkhorn_knopp) = {
    .name = "sinkhorn_knopp", .category = "training", .dims = {"B", "NP"},
    .tiny = {{"B", 3}, {"NP", 37}}, .default_size = {{"B", 1024}, {"NP", 16384}},
    .large = {{"B", 4096}, {"NP", 32768}},
    .validate = RequirePositive, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_sinkhorn_knopp_run, .pkb_id = 80};
}  // namespace pkforge::kernels
