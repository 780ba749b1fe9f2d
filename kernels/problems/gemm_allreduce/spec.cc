// gemm_allreduce: A_r [M, K], B_r [K, N] per rank (rank r's shard of a global
// inner dimension world*K, as in ParallelKernelBench) ->
// y [M, N] = sum over ranks of A_r @ B_r on every rank (row-parallel linear).
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(gemm_allreduce);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int, int) {
  return {{{"A", {d.at("M"), d.at("K")}}, {"B", {d.at("K"), d.at("N")}}},
          {{"y", {d.at("M"), d.at("N")}}}};
}
Tolerance Tol(const Dims& d, int w, pkf_dtype dt) {
  return ReductionTolerance(dt, w, std::sqrt(double(d.at("K")) * w) / 2);
}
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double m = d.at("M"), nn = d.at("N"), k = d.at("K");
  return {m * nn * es, BusFactorAllreduce(n), BusFactorAllreduce(n) * m * nn * es,
          (m * k + k * nn + 2 * m * nn) * es, 2 * m * nn * k};
}
}  // namespace
PKF_DEFINE_PROBLEM(gemm_allreduce) = {
    .name = "gemm_allreduce", .category = "tp-fusion", .dims = {"M", "N", "K"},
    .tiny = {{"M", 8}, {"N", 16}, {"K", 12}},
    .default_size = {{"M", 1024}, {"N", 1024}, {"K", 512}},
    .large = {{"M", 8192}, {"N", 8192}, {"K", 2048}},
    .validate = RequirePositive, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_gemm_allreduce_run, .pkb_id = 13};
}  // namespace pkforge::kernels
