// moe_all2all (ParallelKernelBench 27, all_to_all_single with PKB's split
// rule): x [M, N] per rank; rows [j*chunk, j*chunk + split[j]) go to rank j,
// chunk = M / world, the last split takes the remainder; rank r receives
// y [world * split[r], N] in rank order. Output sizes differ between ranks
// when world does not divide M.
#include <algorithm>

#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(moe_all2all);

namespace pkforge::kernels {
namespace {
int64_t Split(const Dims& d, int w, int r) {
  const int64_t chunk = d.at("M") / w;
  return r == w - 1 ? chunk + d.at("M") % w : chunk;
}
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  if (d.at("M") < w)
    return absl::InvalidArgumentError("dimension M=" + std::to_string(d.at("M")) +
                                      " must be at least the world size " + std::to_string(w));
  return absl::OkStatus();
}
RankSpec Spec(const Dims& d, int w, int rank) {
  return {{{"x", {d.at("M"), d.at("N")}}}, {{"y", {w * Split(d, w, rank), d.at("N")}}}};
}
// The busiest rank (the last one) receives world * split[w-1] rows.
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double row = double(d.at("N")) * es, s = double(d.at("M")) * row;
  const double recv = double(n) * Split(d, n, n - 1) * row;
  return {s, BusFactorGather(n), BusFactorGather(n) * std::max(s, recv), s + recv, 0};
}
}  // namespace
PKF_DEFINE_PROBLEM(moe_all2all) = {
    .name = "moe_all2all", .category = "moe", .dims = {"M", "N"},
    .tiny = {{"M", 19}, {"N", 5}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 8192}, {"N", 8192}},
    .validate = Validate, .spec = Spec, .tolerance = ExactTolerance, .cost = CostOf,
    .host_reference = pkf_ref_moe_all2all_run, .pkb_id = 27};
}  // namespace pkforge::kernels
