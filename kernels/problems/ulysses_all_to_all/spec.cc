// ulysses_all_to_all (ParallelKernelBench 33, scatter_dim 0, gather_dim 1):
// x [M, N] per rank -> y [M/world, world*N]; y[m, j*N + n] = x_j[r*M/world + m, n].
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(ulysses_all_to_all);

namespace pkforge::kernels {
namespace {
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  return RequireDivisible(d, "M", w);
}
RankSpec Spec(const Dims& d, int w, int) {
  return {{{"x", {d.at("M"), d.at("N")}}}, {{"y", {d.at("M") / w, w * d.at("N")}}}};
}
// An all-to-all of the whole local tensor (nccl-tests' alltoall factors).
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double s = double(d.at("M")) * d.at("N") * es;
  return {s, BusFactorGather(n), BusFactorGather(n) * s, 2 * s, 0};
}
}  // namespace
PKF_DEFINE_PROBLEM(ulysses_all_to_all) = {
    .name = "ulysses_all_to_all", .category = "sequence-parallel", .dims = {"M", "N"},
    .tiny = {{"M", 24}, {"N", 5}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 8192}, {"N", 8192}},
    .validate = Validate, .spec = Spec, .tolerance = ExactTolerance, .cost = CostOf,
    .host_reference = pkf_ref_ulysses_all_to_all_run, .pkb_id = 33};
}  // namespace pkforge::kernels
