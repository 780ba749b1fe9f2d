// conv2d_halo (ParallelKernelBench 87, conv2d_boundary_exchange): x [1, C, HL, W]
// per rank (rows of an image split along its height), weight [C, C, 3, 3] and
// bias [C] replicated -> y [1, C, HL, W] = this rank's rows of the 3x3
// convolution (stride 1, padding 1) of the whole image; one-row halos from
// the neighbours. HL = max(3, LH / max(1, world/2)) as PKB derives it.
#include <algorithm>

#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(conv2d_halo);

namespace pkforge::kernels {
namespace {
int64_t Rows(const Dims& d, int w) { return std::max<int64_t>(3, d.at("LH") / std::max(1, w / 2)); }
RankSpec Spec(const Dims& d, int w, int) {
  const int64_t c = d.at("C"), width = d.at("W");
  return {{{"x", {1, c, Rows(d, w), width}}, {"weight", {c, c, 3, 3}, true}, {"bias", {c}, true}},
          {{"y", {1, c, Rows(d, w), width}}}};
}
Tolerance Tol(const Dims& d, int, pkf_dtype dt) {
  return ReductionTolerance(dt, 1, std::sqrt(9.0 * d.at("C")) / 2);
}
// Halo: two rows of C x W to and from the neighbours (one for the edge ranks).
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double c = d.at("C"), width = d.at("W"), h = Rows(d, n);
  const double halo = n > 1 ? 2 * c * width * es : 0;
  return {halo, 1, halo, (2 * c * h * width + 9 * c * c + c) * es, 2 * 9 * c * c * h * width};
}
}  // namespace
PKF_DEFINE_PROBLEM(conv2d_halo) = {
    .name = "conv2d_halo", .category = "spatial-parallel", .dims = {"C", "LH", "W"},
    .tiny = {{"C", 3}, {"LH", 8}, {"W", 5}},
    .default_size = {{"C", 640}, {"LH", 128}, {"W", 128}},
    .large = {{"C", 1280}, {"LH", 256}, {"W", 512}},
    .validate = RequirePositive, .spec = Spec, .tolerance = Tol, .cost = CostOf,
    .host_reference = pkf_ref_conv2d_halo_run, .pkb_id = 87};
}  // namespace pkforge::kernels
