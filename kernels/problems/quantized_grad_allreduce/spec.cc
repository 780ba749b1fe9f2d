// quantized_grad_allreduce (ParallelKernelBench 44): a flat gradient [M*N] per
// rank (viewed as [M*N/BS, BS]), block-wise int8 quantize/dequantize (absmax scale per block of BS
// elements, f32), all-reduce (sum, f32) and mean over ranks -> [M*N].
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(quantized_grad_allreduce);

namespace pkforge::kernels {
namespace {
absl::Status Validate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  if (d.at("M") * d.at("N") % d.at("BS") != 0)
    return absl::InvalidArgumentError("M*N must be divisible by the block size BS");
  return absl::OkStatus();
}
// The flat gradient viewed as [blocks, BS] (same memory as PKB's flat tensor).
RankSpec Spec(const Dims& d, int, int) {
  const std::vector<int64_t> g = {d.at("M") * d.at("N") / d.at("BS"), d.at("BS")};
  return {{{"grad", g}}, {{"avg", g}}};
}
// The dequantized values are exact f32 functions of the inputs; only the f32
// sum over ranks (any order) and the final rounding differ between correct
// implementations.
Tolerance Tol(const Dims&, int, pkf_dtype dt) { return {BaseTolerance(dt) / 4, BaseTolerance(dt)}; }
// What must cross at least: the int8 payload and one f32 scale per block, in
// an all-reduce pattern (PKB all-reduces the dequantized f32 values).
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double e = double(d.at("M")) * d.at("N");
  return {e * es, BusFactorAllreduce(n), BusFactorAllreduce(n) * e * (1 + 4.0 / d.at("BS")), 2 * e * es, 6 * e};
}
}  // namespace
PKF_DEFINE_PROBLEM(quantized_grad_allreduce) = {
    .name = "quantized_grad_allreduce", .category = "training", .dims = {"M", "N", "BS"},
    .tiny = {{"M", 3}, {"N", 32}, {"BS", 16}},
    .default_size = {{"M", 1024}, {"N", 1024}, {"BS", 128}},
    .large = {{"M", 8192}, {"N", 8192}, {"BS", 128}},
    .validate = Validate, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_quantized_grad_allreduce_run, .pkb_id = 44};
}  // namespace pkforge::kernels
