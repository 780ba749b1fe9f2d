// kjt_all2all (ParallelKernelBench 70, torchrec_kjt_all2all): TorchRec's
// KeyedJaggedTensor all-to-all for model-parallel embedding tables. Rank j
// owns KS_j = 1 + j % 3 features (PKB's key_splits); every rank holds a
// jagged batch of all F = sum KS_j features (B samples each, lengths in
// [5, 21), i64 ids) and sends each owner its features' lengths and values;
// the owner regroups them feature-major (PKB's recat). The values are
// variable-size: inputs and outputs are capacity buffers (20 per length),
// the unused tail of the output is -1.
#include <algorithm>

#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(kjt_all2all);

namespace pkforge::kernels {
namespace {
int64_t KeySplit(int j) { return 1 + j % 3; }
int64_t Features(int w) {
  int64_t f = 0;
  for (int j = 0; j < w; ++j) f += KeySplit(j);
  return f;
}
// PKB: batch_size = max(512, min(M / world, 1024)); the same at M = 1024 as
// max(M/2, M/world), which also scales for other M.
int64_t Batch(const Dims& d, int w) { return std::max<int64_t>(std::max<int64_t>(1, d.at("M") / 2), d.at("M") / w); }
constexpr int64_t kMaxLength = 20;
RankSpec Spec(const Dims& d, int w, int r) {
  const int64_t b = Batch(d, w), f = Features(w), ks = KeySplit(r);
  return {{IntInput("lengths", {f * b}, PKF_I64, 5, kMaxLength + 1),
           IntInput("values", {f * b * kMaxLength}, PKF_I64, 0, 1000000)},
          {TypedOutput("lengths_out", {ks * w * b}, PKF_I64),
           TypedOutput("values_out", {ks * w * b * kMaxLength}, PKF_I64),
           TypedOutput("stride", {1}, PKF_I64), TypedOutput("stride_per_rank", {w}, PKF_I64)}};
}
// The busiest rank owns 3 features: it receives 3*B lengths and ~12.5 values
// per length from every other rank; every rank sends (world-1)/world of its
// jagged batch.
Cost CostOf(const Dims& d, int n, int64_t) {
  const double b = Batch(d, n), per_row = 8 * (1 + 12.5);
  const double recv = double(n - 1) * std::min<int64_t>(3, Features(n)) * b * per_row;
  const double send = Features(n) * b * per_row * BusFactorGather(n);
  const double moved = std::max(recv, send);
  return {moved, 1, moved, 2 * moved + Features(n) * b * per_row, 0};
}
}  // namespace
PKF_DEFINE_PROBLEM(kjt_all2all) = {
    .name = "kjt_all2all", .category = "recsys", .dims = {"M"},
    .tiny = {{"M", 4}}, .default_size = {{"M", 1024}}, .large = {{"M", 16384}},
    .dtypes = {PKF_F32},
    .validate = RequirePositive, .spec = Spec, .tolerance = ExactTolerance, .cost = CostOf,
    .host_reference = pkf_ref_kjt_all2all_run, .pkb_id = 70};
}  // namespace pkforge::kernels
