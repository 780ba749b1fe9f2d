// gemm_allgather (ParallelKernelBench 14): A [M, K] replicated, B_r [K, N/world]
// per rank -> y [M, N] on every rank, column block j = A @ B_j.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(gemm_allgather);

namespace pkforge::kernels {
namespace {
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  return RequireDivisible(d, "N", w);
}
RankSpec Spec(const Dims& d, int w, int) {
  return {{{"A", {d.at("M"), d.at("K")}, true}, {"B", {d.at("K"), d.at("N") / w}}},
          {{"y", {d.at("M"), d.at("N")}}}};
}
Tolerance Tol(const Dims& d, int, pkf_dtype dt) {
  return ReductionTolerance(dt, 1, std::sqrt(double(d.at("K"))) / 2);
}
// The all-gather moves the M x N output (each rank contributes M x N/world).
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double m = d.at("M"), nn = d.at("N"), k = d.at("K");
  return {m * nn * es, BusFactorGather(n), BusFactorGather(n) * m * nn * es,
          (m * k + k * nn / n + m * nn) * es, 2 * m * (nn / n) * k};
}
}  // namespace
PKF_DEFINE_PROBLEM(gemm_allgather) = {
    .name = "gemm_allgather", .category = "tp-fusion", .dims = {"M", "N", "K"},
    .tiny = {{"M", 8}, {"N", 24}, {"K", 16}},
    .default_size = {{"M", 1024}, {"N", 1024}, {"K", 512}},
    .large = {{"M", 8192}, {"N", 8192}, {"K", 8192}},
    .validate = Validate, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_gemm_allgather_run, .pkb_id = 14};
}  // namespace pkforge::kernels
