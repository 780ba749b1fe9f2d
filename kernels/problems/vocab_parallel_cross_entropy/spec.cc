// vocab_parallel_cross_entropy (ParallelKernelBench 73,
// vocab_parallel_cross_entropy_loss): logits [B, T, V/world] per rank (rank r
// holds vocabulary entries [r*V/world, (r+1)*V/world)), target [B, T] i64 in
// [0, V) replicated -> loss [B, T] on every rank = logsumexp over the whole
// vocabulary - the target's logit (Megatron's vocab-parallel cross entropy:
// all-reduce max, all-reduce the target logit and the sum of exponentials).
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(vocab_parallel_cross_entropy);

namespace pkforge::kernels {
namespace {
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  return RequireDivisible(d, "V", w);
}
RankSpec Spec(const Dims& d, int w, int) {
  const int64_t b = d.at("B"), t = d.at("T"), v = d.at("V");
  return {{{"logits", {b, t, v / w}}, IntInput("target", {b, t}, PKF_I64, 0, v, /*replicated=*/true)},
          {{"loss", {b, t}}}};
}
// f32 arithmetic rounded once: the loss (~log V) carries about one rounding of
// the dtype; f32 sums of V exponentials in any order stay well inside base.
Tolerance Tol(const Dims&, int, pkf_dtype dt) {
  const double base = BaseTolerance(dt);
  return {base, base};
}
// Three all-reduces of B*T f32 values (max, target logit, sum of exponentials);
// the logits are read (twice by the reference: max, then exponentials).
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double rows = double(d.at("B")) * d.at("T"), vl = double(d.at("V")) / n;
  const double s = 3 * rows * 4;
  return {s, BusFactorAllreduce(n), BusFactorAllreduce(n) * s, rows * vl * es + rows * (8 + es),
          3 * rows * vl};
}
}  // namespace
PKF_DEFINE_PROBLEM(vocab_parallel_cross_entropy) = {
    .name = "vocab_parallel_cross_entropy", .category = "loss", .dims = {"B", "T", "V"},
    .tiny = {{"B", 2}, {"T", 3}, {"V", 24}},
    .default_size = {{"B", 8}, {"T", 1024}, {"V", 512}},
    .large = {{"B", 8}, {"T", 1024}, {"V", 32768}},
    .validate = Validate, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_vocab_parallel_cross_entropy_run, .pkb_id = 73};
}  // namespace pkforge::kernels
