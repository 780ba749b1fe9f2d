// scatter (root 0): in x [world*M, N] on rank 0 only -> out y [M, N] = chunk r of x.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(scatter);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int w, int rank) {
  RankSpec s{{}, {{"y", {d.at("M"), d.at("N")}}}};
  if (rank == 0) s.in.push_back({"x", {w * d.at("M"), d.at("N")}});
  return s;
}
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double s = double(d.at("M")) * d.at("N") * es;
  return {n * s, BusFactorGather(n), (n - 1) * s, (n + 1) * s, 0};
}
}  // namespace
PKF_DEFINE_PROBLEM(scatter) = {
    .name = "scatter", .category = "collective", .dims = {"M", "N"},
    .tiny = {{"M", 3}, {"N", 37}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 2048}, {"N", 8192}},
    .validate = RequirePositive, .spec = Spec, .tolerance = ExactTolerance, .cost = CostOf,
    .host_reference = pkf_ref_scatter_run, .pkb_id = 5};
}  // namespace pkforge::kernels
