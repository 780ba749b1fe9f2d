// reduce (root 0, sum): in x [M, N] per rank -> out y [M, N] on rank 0 only.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(reduce);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int, int rank) {
  RankSpec s{{{"x", {d.at("M"), d.at("N")}}}, {}};
  if (rank == 0) s.out.push_back({"y", {d.at("M"), d.at("N")}});
  return s;
}
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double s = double(d.at("M")) * d.at("N") * es;
  return {s, n > 1 ? 1.0 : 0.0, n > 1 ? s : 0.0, 2 * s, double(d.at("M")) * d.at("N") * (n - 1) / n};
}
}  // namespace
PKF_DEFINE_PROBLEM(reduce) = {
    .name = "reduce", .category = "collective", .dims = {"M", "N"},
    .tiny = {{"M", 3}, {"N", 37}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 8192}, {"N", 8192}},
    .validate = RequirePositive, .spec = Spec, .tolerance = WorldSumTolerance, .cost = CostOf,
    .host_reference = pkf_ref_reduce_run, .pkb_id = 4};
}  // namespace pkforge::kernels
