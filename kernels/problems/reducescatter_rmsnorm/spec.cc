// reducescatter_rmsnorm (ParallelKernelBench 45, reducescatter_fused_rmsnorm):
// x [world*R, H] per rank, gamma [H] replicated -> y [R, H] on rank r =
// RMSNorm(mean over ranks of rows [r*R, (r+1)*R)) * gamma, eps 1e-5;
// R = max(2, max(M, world) / max(world, 4)) as PKB derives it from M.
#include <algorithm>

#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(reducescatter_rmsnorm);

namespace pkforge::kernels {
namespace {
int64_t Rows(const Dims& d, int w) {
  return std::max<int64_t>(2, std::max<int64_t>(d.at("M"), w) / std::max(w, 4));
}
// The host oracle keeps one row in f32 on its stack.
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  if (d.at("H") > 4096) return absl::InvalidArgumentError("dimension H must be at most 4096");
  return absl::OkStatus();
}
RankSpec Spec(const Dims& d, int w, int) {
  const int64_t r = Rows(d, w), h = d.at("H");
  return {{{"x", {w * r, h}}, {"gamma", {h}, true}}, {{"y", {r, h}}}};
}
// Outputs are ~1 (normalized, |gamma| < 1). A reduce-scatter in the dtype
// (NCCL, what PKB does) rounds world-1 partial sums, so atol grows with
// world; 2 * base * max(1, world/2) (ReductionTolerance) accepted f16 outputs
// of bf16 precision at world 3 (kernels_suite_test, coarse-precision policy).
Tolerance Tol(const Dims&, int w, pkf_dtype dt) {
  return {BaseTolerance(dt) * std::max(0.5, (w - 1) / 2.0), BaseTolerance(dt)};
}
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double r = double(Rows(d, n)), h = d.at("H"), all = n * r * h;
  return {all * es, BusFactorGather(n), BusFactorGather(n) * all * es, (all + h + r * h) * es,
          all + 5 * r * h};
}
}  // namespace
PKF_DEFINE_PROBLEM(reducescatter_rmsnorm) = {
    .name = "reducescatter_rmsnorm", .category = "tp-fusion", .dims = {"M", "H"},
    .tiny = {{"M", 16}, {"H", 8}}, .default_size = {{"M", 1024}, {"H", 128}},
    .large = {{"M", 16384}, {"H", 1024}},
    .validate = Validate, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_reducescatter_rmsnorm_run, .pkb_id = 45};
}  // namespace pkforge::kernels
