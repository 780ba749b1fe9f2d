// ulysses_gather_seq_scatter_heads_qkv (ParallelKernelBench 38): packed qkv
// [B, T, 3*NH*D] per rank (a sequence shard) -> [B, world*T, 3*NH*D/world] (the
// whole sequence, this rank's slice of each of q, k, v): with C = NH*D/world,
// y[b, j*T + t, s*C + c] = x_j[b, t, s*NH*D + r*C + c] for s in {q, k, v}.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(ulysses_gather_seq_scatter_heads_qkv);

namespace pkforge::kernels {
namespace {
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  if (d.at("NH") * d.at("D") % w != 0)
    return absl::InvalidArgumentError("NH*D must be divisible by the world size " + std::to_string(w));
  return absl::OkStatus();
}
RankSpec Spec(const Dims& d, int w, int) {
  const int64_t b = d.at("B"), t = d.at("T"), hd = d.at("NH") * d.at("D");
  return {{{"qkv", {b, t, 3 * hd}}}, {{"y", {b, w * t, 3 * hd / w}}}};
}
// An all-to-all of the whole local tensor (nccl-tests' alltoall factors).
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double s = 3.0 * d.at("B") * d.at("T") * d.at("NH") * d.at("D") * es;
  return {s, BusFactorGather(n), BusFactorGather(n) * s, 2 * s, 0};
}
}  // namespace
PKF_DEFINE_PROBLEM(ulysses_gather_seq_scatter_heads_qkv) = {
    .name = "ulysses_gather_seq_scatter_heads_qkv", .category = "sequence-parallel",
    .dims = {"B", "T", "NH", "D"},
    .tiny = {{"B", 2}, {"T", 3}, {"NH", 3}, {"D", 8}},
    .default_size = {{"B", 16}, {"T", 16}, {"NH", 8}, {"D", 64}},
    .large = {{"B", 4}, {"T", 4096}, {"NH", 32}, {"D", 128}},
    .validate = Validate, .spec = Spec, .tolerance = ExactTolerance, .cost = CostOf,
    .host_reference = pkf_ref_ulysses_gather_seq_scatter_heads_qkv_run, .pkb_id = 38};
}  // namespace pkforge::kernels
