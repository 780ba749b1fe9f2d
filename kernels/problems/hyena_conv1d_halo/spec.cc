// hyena_conv1d_halo (ParallelKernelBench 71, hyena_conv1d_boundary_exchange):
// x [B, C, 2L] per rank (zigzag chunks a_r, b_r), weight [C, 1, K] replicated
// -> y [B, C, 2L]: depthwise causal conv1d of each chunk preceded by the K-1
// positions before it in the global zigzag sequence (a_{r-1}'s tail, b_{r+1}'s
// tail; zeros on rank 0, its own a tail for b on the last rank).
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(hyena_conv1d_halo);

namespace pkforge::kernels {
namespace {
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  // The halo comes from one neighbouring chunk (PKB narrows a chunk to K-1).
  if (d.at("KS") - 1 > d.at("L"))
    return absl::InvalidArgumentError("dimension KS must be at most L+1 (the halo is K-1 positions of one chunk)");
  return absl::OkStatus();
}
RankSpec Spec(const Dims& d, int, int) {
  const int64_t b = d.at("B"), c = d.at("C"), l = d.at("L"), k = d.at("KS");
  return {{{"x", {b, c, 2 * l}}, {"weight", {c, 1, k}, true}}, {{"y", {b, c, 2 * l}}}};
}
// A sum of K products of magnitude ~1.
Tolerance Tol(const Dims& d, int, pkf_dtype dt) {
  return ReductionTolerance(dt, 1, std::sqrt(double(d.at("KS"))) / 2);
}
// Each rank sends two halos of B*C*(K-1) elements and receives two.
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double b = d.at("B"), c = d.at("C"), l = d.at("L"), k = d.at("KS");
  const double halo = n > 1 ? 2 * b * c * (k - 1) : 0;
  return {halo * es, 1.0, halo * es, (2 * b * c * 2 * l + c * k + 2 * halo) * es, 2 * b * c * 2 * l * k};
}
}  // namespace
PKF_DEFINE_PROBLEM(hyena_conv1d_halo) = {
    .name = "hyena_conv1d_halo", .category = "sequence-parallel", .dims = {"B", "C", "L", "KS"},
    .tiny = {{"B", 2}, {"C", 3}, {"L", 4}, {"KS", 3}},
    .default_size = {{"B", 1}, {"C", 1024}, {"L", 1024}, {"KS", 7}},
    .large = {{"B", 4}, {"C", 4096}, {"L", 4096}, {"KS", 7}},
    .validate = Validate, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_hyena_conv1d_halo_run, .pkb_id = 71};
}  // namespace pkforge::kernels
