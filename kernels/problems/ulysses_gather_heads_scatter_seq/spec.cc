// ulysses_gather_heads_scatter_seq (ParallelKernelBench 37): x [B, T, NH, D] per
// rank (the whole sequence, this rank's heads) -> y [B, T/world, world*NH, D]
// (a sequence shard, all heads): y[b, t, j*NH + h, d] = x_j[b, r*T/world + t, h, d].
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(ulysses_gather_heads_scatter_seq);

namespace pkforge::kernels {
namespace {
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  return RequireDivisible(d, "T", w);
}
RankSpec Spec(const Dims& d, int w, int) {
  const int64_t b = d.at("B"), t = d.at("T"), h = d.at("NH"), hd = d.at("D");
  return {{{"x", {b, t, h, hd}}}, {{"y", {b, t / w, w * h, hd}}}};
}
// An all-to-all of the whole local tensor (nccl-tests' alltoall factors).
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double s = double(d.at("B")) * d.at("T") * d.at("NH") * d.at("D") * es;
  return {s, BusFactorGather(n), BusFactorGather(n) * s, 2 * s, 0};
}
}  // namespace
PKF_DEFINE_PROBLEM(ulysses_gather_heads_scatter_seq) = {
    .name = "ulysses_gather_heads_scatter_seq", .category = "sequence-parallel",
    .dims = {"B", "T", "NH", "D"},
    .tiny = {{"B", 2}, {"T", 24}, {"NH", 3}, {"D", 2}},
    .default_size = {{"B", 16}, {"T", 16}, {"NH", 8}, {"D", 64}},
    .large = {{"B", 4}, {"T", 4096}, {"NH", 32}, {"D", 128}},
    .validate = Validate, .spec = Spec, .tolerance = ExactTolerance, .cost = CostOf,
    .host_reference = pkf_ref_ulysses_gather_heads_scatter_seq_run, .pkb_id = 37};
}  // namespace pkforge::kernels
