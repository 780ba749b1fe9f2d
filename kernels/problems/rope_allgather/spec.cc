// rope_allgather (ParallelKernelBench 17): q, k [B, S, NH, D] and cos, sin
// [B, S, D] per rank (S = max(1, T/world) positions) -> q_out, k_out
// [B, world*S, NH, D] on every rank: RoPE (x*cos + rotate_half(x)*sin) of each
// rank's shard, gathered along the sequence dimension.
#include <algorithm>

#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(rope_allgather);

namespace pkforge::kernels {
namespace {
int64_t Positions(const Dims& d, int w) { return std::max<int64_t>(1, d.at("T") / w); }
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  return RequireDivisible(d, "D", 2);  // rotate_half splits D in two halves
}
RankSpec Spec(const Dims& d, int w, int) {
  const int64_t b = d.at("B"), s = Positions(d, w), h = d.at("NH"), hd = d.at("D");
  return {{{"q", {b, s, h, hd}}, {"k", {b, s, h, hd}}, {"cos", {b, s, hd}}, {"sin", {b, s, hd}}},
          {{"q_out", {b, w * s, h, hd}}, {"k_out", {b, w * s, h, hd}}}};
}
// Two products and a sum per element, computed in f32 and rounded once.
Tolerance Tol(const Dims&, int, pkf_dtype dt) { return {BaseTolerance(dt), BaseTolerance(dt)}; }
// The all-gather moves both outputs (each rank contributes its shard of q and k).
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double s = double(Positions(d, n)), shard = d.at("B") * s * d.at("NH") * d.at("D");
  const double trig = d.at("B") * s * d.at("D"), all = 2 * n * shard;
  return {all * es, BusFactorGather(n), BusFactorGather(n) * all * es,
          (2 * shard + 2 * trig + all) * es, 3 * 2 * shard};
}
}  // namespace
PKF_DEFINE_PROBLEM(rope_allgather) = {
    .name = "rope_allgather", .category = "sequence-parallel", .dims = {"B", "T", "NH", "D"},
    .tiny = {{"B", 2}, {"T", 4}, {"NH", 2}, {"D", 4}},
    .default_size = {{"B", 16}, {"T", 16}, {"NH", 8}, {"D", 64}},
    .large = {{"B", 4}, {"T", 4096}, {"NH", 32}, {"D", 128}},
    .validate = Validate, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_rope_allgather_run, .pkb_id = 17};
}  // namespace pkforge::kernels
