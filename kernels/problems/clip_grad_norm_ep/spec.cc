// clip_grad_norm_ep (ParallelKernelBench 22, clip_grad_norm_ep): a non-expert
// gradient shard g [M, N] and an expert gradient shard e [M, N] per rank ->
// clipped c_g, c_e [M, N] and total_norm [1]. The expert gradient is first
// scaled by 1/ep_size (ep_size = max(1, world/2)); total_norm = L2 norm of
// both over all ranks (PKB reduces the expert term over the EP-FSDP and EP
// groups, which tile the world); coef = 1/total_norm when total_norm > 1.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(clip_grad_norm_ep);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int, int) {
  const std::vector<int64_t> g = {d.at("M"), d.at("N")};
  return {{{"g", g}, {"e", g}}, {{"c_g", g}, {"c_e", g}, {"total_norm", {1}}}};
}
// As clip_grad_norm: the clipped values are ~1/sqrt(2*world*M*N).
Tolerance Tol(const Dims& d, int w, pkf_dtype dt) {
  const double base = BaseTolerance(dt);
  return {base / std::sqrt(2.0 * w * d.at("M") * d.at("N")), base};
}
// One all-reduce of the two sums of squares; read both gradients, write both.
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double e = 2.0 * d.at("M") * d.at("N");
  return {8, BusFactorAllreduce(n), BusFactorAllreduce(n) * 8, 2 * e * es, 4 * e};
}
}  // namespace
PKF_DEFINE_PROBLEM(clip_grad_norm_ep) = {
    .name = "clip_grad_norm_ep", .category = "training", .dims = {"M", "N"},
    .tiny = {{"M", 3}, {"N", 37}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 4096}, {"N", 8192}},
    .validate = RequirePositive, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_clip_grad_norm_ep_run, .pkb_id = 22};
}  // namespace pkforge::kernels
