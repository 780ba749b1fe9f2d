// ring_attention (ParallelKernelBench 54, forward, causal): q, k, v
// [B, S, NH, D] per rank (S = max(1, T/world) positions; rank r holds global
// positions [r*S, (r+1)*S)) -> out [B, S, NH, D] = causal softmax attention of
// rank r's queries over the keys of every position up to theirs.
#include <algorithm>

#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(ring_attention);

namespace pkforge::kernels {
namespace {
int64_t Positions(const Dims& d, int w) { return std::max<int64_t>(1, d.at("T") / w); }
RankSpec Spec(const Dims& d, int w, int) {
  const std::vector<int64_t> x = {d.at("B"), Positions(d, w), d.at("NH"), d.at("D")};
  return {{{"q", x}, {"k", x}, {"v", x}}, {{"out", x}}};
}
// A convex combination of v (|v| < 1) computed in f32: only the final
// rounding and the summation order differ between correct implementations.
Tolerance Tol(const Dims&, int, pkf_dtype dt) { return {BaseTolerance(dt) / 4, BaseTolerance(dt)}; }
// The last rank needs every other rank's k and v; QK^T and PV over the causal
// prefix (the last rank's share, the busiest).
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double s = double(Positions(d, n)), shard = d.at("B") * s * d.at("NH") * d.at("D");
  const double keys = n * s;
  return {2 * shard * es * n, BusFactorGather(n), BusFactorGather(n) * 2 * shard * es * n,
          (3 * shard + 2 * shard * (n - 1) + shard) * es, 4 * shard * keys};
}
}  // namespace
PKF_DEFINE_PROBLEM(ring_attention) = {
    .name = "ring_attention", .category = "sequence-parallel", .dims = {"B", "T", "NH", "D"},
    .tiny = {{"B", 2}, {"T", 4}, {"NH", 2}, {"D", 4}},
    .default_size = {{"B", 16}, {"T", 16}, {"NH", 8}, {"D", 64}},
    .large = {{"B", 2}, {"T", 8192}, {"NH", 16}, {"D", 128}},
    .validate = RequirePositive, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_ring_attention_run, .pkb_id = 54};
}  // namespace pkforge::kernels
