// load_balancing_loss (ParallelKernelBench 24, load_balancing_loss_fn): gate
// logits [M, E] per rank -> the Switch/Mixtral auxiliary loss [1] (each rank's
// E * sum_e tokens_per_expert * router_prob_per_expert, averaged over ranks)
// and PKB's tokens_per_expert [TOPK, E] over all ranks' tokens (fraction of
// tokens whose k-th choice is expert e).
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(load_balancing_loss);

namespace pkforge::kernels {
namespace {
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  if (d.at("E") > 64) return absl::InvalidArgumentError("dimension E must be at most 64");
  if (d.at("TOPK") > d.at("E")) return absl::InvalidArgumentError("dimension TOPK must be at most E");
  return absl::OkStatus();
}
RankSpec Spec(const Dims& d, int, int) {
  return {{{"gate_logits", {d.at("M"), d.at("E")}}}, {{"loss", {1}}, {"tokens_per_expert", {d.at("TOPK"), d.at("E")}}}};
}
// Every value is a mean of f32 softmax probabilities or of counts: the only
// dtype-sized error is the final rounding (or PyTorch's rounding of the mean
// probabilities to the dtype), so rtol = base and no absolute slack.
Tolerance Tol(const Dims&, int, pkf_dtype dt) { return {0, BaseTolerance(dt)}; }
// One all-reduce of TOPK*E+1 values; the logits are read once.
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double m = d.at("M"), e = d.at("E"), s = (d.at("TOPK") * e + 1) * 4;
  return {s, BusFactorAllreduce(n), BusFactorAllreduce(n) * s, (m * e + d.at("TOPK") * e + 1) * es,
          m * e * (4 + d.at("TOPK"))};
}
}  // namespace
PKF_DEFINE_PROBLEM(load_balancing_loss) = {
    .name = "load_balancing_loss", .category = "moe", .dims = {"M", "E", "TOPK"},
    .tiny = {{"M", 7}, {"E", 8}, {"TOPK", 2}},
    .default_size = {{"M", 1024}, {"E", 8}, {"TOPK", 2}},
    .large = {{"M", 65536}, {"E", 64}, {"TOPK", 8}},
    .validate = Validate, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_load_balancing_loss_run, .pkb_id = 24};
}  // namespace pkforge::kernels
