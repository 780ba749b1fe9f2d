// embedding_lookup (ParallelKernelBench 10, embedding_lookup): a vocab-parallel
// embedding table, rows [r*M, (r+1)*M) on rank r (table [M, N]); each rank
// looks up M i64 indices in [0, world*M) and receives their rows grouped by
// the owning rank (PKB's order: a stable partition of the indices by owner,
// exchanged with all_to_all_single both ways).
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(embedding_lookup);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int w, int) {
  const int64_t m = d.at("M"), n = d.at("N");
  return {{IntInput("indices", {m}, PKF_I64, 0, w * m), {"table", {m, n}}}, {{"y", {m, n}}}};
}
// Random indices: (world-1)/world of the rows (and of the indices that ask
// for them) cross the interconnect, as in an all-to-all of M rows.
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double m = d.at("M"), row = double(d.at("N")) * es;
  const double remote = BusFactorGather(n) * m;
  return {m * row, BusFactorGather(n), remote * (row + 8),
          2 * m * row + 3 * m * 8, 0};
}
}  // namespace
PKF_DEFINE_PROBLEM(embedding_lookup) = {
    .name = "embedding_lookup", .category = "embedding", .dims = {"M", "N"},
    .tiny = {{"M", 7}, {"N", 5}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 8192}, {"N", 8192}},
    .validate = RequirePositive, .spec = Spec, .tolerance = ExactTolerance, .cost = CostOf,
    .host_reference = pkf_ref_embedding_lookup_run, .pkb_id = 10};
}  // namespace pkforge::kernels
