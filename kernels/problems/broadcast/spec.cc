// broadcast (root 0): in x [M, N] on every rank -> out y [M, N] = x of rank 0.
#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(broadcast);

namespace pkforge::kernels {
namespace {
RankSpec Spec(const Dims& d, int, int) {
  return {{{"x", {d.at("M"), d.at("N")}}}, {{"y", {d.at("M"), d.at("N")}}}};
}
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double s = double(d.at("M")) * d.at("N") * es;
  return {s, n > 1 ? 1.0 : 0.0, n > 1 ? s : 0.0, 2 * s, 0};
}
}  // namespace
PKF_DEFINE_PROBLEM(broadcast) = {
    .name = "broadcast", .category = "collective", .dims = {"M", "N"},
    .tiny = {{"M", 3}, {"N", 37}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 8192}, {"N", 8192}},
    .validate = RequirePositive, .spec = Spec, .tolerance = ExactTolerance, .cost = CostOf,
    .host_reference = pkf_ref_broadcast_run, .pkb_id = 3};
}  // namespace pkforge::kernels
