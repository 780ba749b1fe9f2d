// moe_token_preprocess (ParallelKernelBench 26, moe_token_preprocess):
// Megatron's expert-parallel all-to-all preprocessing. Each rank routes M
// tokens to TOPK experts each (i64 expert ids in [0, E); PKB passes the same
// routing as a one-hot float mask [E, TOPK, M]); with EL = E/world experts per
// rank, rank r outputs the all-to-all splits (tokens to send to / receive from
// every rank) and the per-local-expert token counts of every source rank. All
// tensors are i64; the job's dtype is unused.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(moe_token_preprocess);

namespace pkforge::kernels {
namespace {
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  return RequireDivisible(d, "E", w);
}
RankSpec Spec(const Dims& d, int w, int) {
  const int64_t e = d.at("E"), el = e / w;
  return {{IntInput("selected_experts", {d.at("M"), d.at("TOPK")}, PKF_I64, 0, e)},
          {TypedOutput("input_splits", {w}, PKF_I64), TypedOutput("output_splits", {w}, PKF_I64),
           TypedOutput("tokens_per_local_expert", {w, el}, PKF_I64),
           TypedOutput("sum_tokens_per_local_expert", {el}, PKF_I64)}};
}
// One all-gather of E i64 counts; the routing is read once.
Cost CostOf(const Dims& d, int n, int64_t) {
  const double e = d.at("E"), s = n * e * 8;
  return {s, BusFactorGather(n), BusFactorGather(n) * s,
          double(d.at("M")) * d.at("TOPK") * 8 + s + (2 * n + 2 * e) * 8, double(d.at("M")) * d.at("TOPK")};
}
}  // namespace
PKF_DEFINE_PROBLEM(moe_token_preprocess) = {
    .name = "moe_token_preprocess", .category = "moe", .dims = {"M", "E", "TOPK"},
    .tiny = {{"M", 9}, {"E", 24}, {"TOPK", 2}},
    .default_size = {{"M", 1024}, {"E", 8}, {"TOPK", 2}},
    .large = {{"M", 16384}, {"E", 64}, {"TOPK", 8}},
    .dtypes = {PKF_F32},
    .validate = Validate, .spec = Spec, .tolerance = ExactTolerance, .cost = CostOf,
    .host_reference = pkf_ref_moe_token_preprocess_run, .pkb_id = 26};
}  // namespace pkforge::kernels
