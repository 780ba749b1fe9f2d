// clip_grad_norm (ParallelKernelBench 21, clip_grad_norm_no_ep): g0, g1, g2
// [M, N] per rank (FSDP shards) -> clipped c0, c1, c2 [M, N] and total_norm [1];
// total_norm = global L2 norm over all ranks and tensors, coef = 1/total_norm
// when total_norm > 1 (max_norm), else 1.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(clip_grad_norm);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int, int) {
  const std::vector<int64_t> g = {d.at("M"), d.at("N")};
  return {{{"g0", g}, {"g1", g}, {"g2", g}},
          {{"c0", g}, {"c1", g}, {"c2", g}, {"total_norm", {1}}}};
}
// Inputs are uniform in [-1, 1): total_norm ~ sqrt(world*M*N), so clipped
// gradients are ~1/sqrt(world*M*N); the absolute tolerance follows them (a
// fixed one would accept all-zero outputs), the relative one covers the norm.
Tolerance Tol(const Dims& d, int w, pkf_dtype dt) {
  const double base = BaseTolerance(dt);
  return {base / std::sqrt(double(w) * d.at("M") * d.at("N")), base};
}
// Lower bound: read the gradients twice (norm, then scale) is what a real
// implementation does beyond L2; the bound counts one read and one write.
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double e = 3.0 * d.at("M") * d.at("N");
  return {4, BusFactorAllreduce(n), BusFactorAllreduce(n) * 4, 2 * e * es, 3 * e};
}
}  // namespace
PKF_DEFINE_PROBLEM(clip_grad_norm) = {
    .name = "clip_grad_norm", .category = "training", .dims = {"M", "N"},
    .tiny = {{"M", 3}, {"N", 37}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 4096}, {"N", 8192}},
    .validate = RequirePositive, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_clip_grad_norm_run, .pkb_id = 21};
}  // namespace pkforge::kernels
