// sample_sort (ParallelKernelBench 85, distributed_sample_sort): every rank
// holds N values; after PKB's sample sort and its exact redistribution, rank
// r holds elements [r*N, (r+1)*N) of the globally sorted array (ascending).
// N = max(4*world, M/world) (PKB's max(4*world, min(M/world, 4096)) at
// M = 1024, proportional above 4096 so that "large" is larger).
#include <algorithm>

#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(sample_sort);

namespace pkforge::kernels {
namespace {
int64_t Local(const Dims& d, int w) { return std::max<int64_t>(4 * w, d.at("M") / w); }
RankSpec Spec(const Dims& d, int w, int) {
  const int64_t n = Local(d, w);
  return {{{"local_shard", {n}}}, {{"sorted", {n}}}};
}
// A sample sort moves about (world-1)/world of the data once to its bucket
// and once more to balance (the exact redistribution), and reads and writes
// it a few times (local sort, merge).
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double bytes = double(Local(d, n)) * es;
  return {bytes, BusFactorGather(n), 2 * BusFactorGather(n) * bytes, 6 * bytes, 0};
}
}  // namespace
PKF_DEFINE_PROBLEM(sample_sort) = {
    .name = "sample_sort", .category = "sort", .dims = {"M"},
    .tiny = {{"M", 12}}, .default_size = {{"M", 1024}}, .large = {{"M", 65536}},
    .validate = RequirePositive, .spec = Spec, .tolerance = ExactTolerance, .cost = CostOf,
    .host_reference = pkf_ref_sample_sort_run, .pkb_id = 85};
}  // namespace pkforge::kernels
