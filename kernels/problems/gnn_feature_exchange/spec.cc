// gnn_feature_exchange (ParallelKernelBench 65, gnn_feature_exchange_all2all):
// a distributed GNN's feature fetch. Each rank gathers rows of its local
// feature table by i64 ids (world chunks of R rows) and exchanges the chunks
// with PKB's rotated all-to-all: rank r's output chunk c is rank (r+c) mod
// world's gathered chunk (-c) mod world. R, the feature width and the table
// size derive from M, N and the world size as PKB's input generator does at
// its size (M = N = 1024); PKB's caps (R <= 1024, width <= 128) become
// proportional (R = M/world, width = N/8) so that "large" is larger.
#include <algorithm>

#include "kernels/problems/common/spec_util.h"

PKF_DECLARE_HOST_REFERENCE(gnn_feature_exchange);

namespace pkforge::kernels {
namespace {
// PKB: rows_per_peer = max(64, min(M / world, 1024)), hidden = max(8, min(N, 128)),
// seed_size = max(1, 3 * world * rows_per_peer / 4); equal at M = N = 1024.
int64_t Rows(const Dims& d, int w) { return std::max<int64_t>(64, d.at("M") / w); }
int64_t Hidden(const Dims& d) { return std::max<int64_t>(8, d.at("N") / 8); }
int64_t Seeds(const Dims& d, int w) { return std::max<int64_t>(1, w * Rows(d, w) * 3 / 4); }
RankSpec Spec(const Dims& d, int w, int) {
  const int64_t r = Rows(d, w), h = Hidden(d), s = Seeds(d, w);
  return {{{"local_features", {s, h}}, IntInput("seed_inverse_ids", {w * r}, PKF_I64, 0, s)},
          {{"out", {w * r, h}}}};
}
// An all-to-all of world chunks of R rows (one stays local); the gather reads
// and writes world*R rows, the exchange reads and writes them again.
Cost CostOf(const Dims& d, int n, int64_t es) {
  const double rows = double(n) * Rows(d, n), row = double(Hidden(d)) * es;
  return {rows * row, BusFactorGather(n), BusFactorGather(n) * rows * row,
          rows * (8 + 4 * row), 0};
}
}  // namespace
PKF_DEFINE_PROBLEM(gnn_feature_exchange) = {
    .name = "gnn_feature_exchange", .category = "gnn", .dims = {"M", "N"},
    .tiny = {{"M", 64}, {"N", 8}}, .default_size = {{"M", 1024}, {"N", 1024}},
    .large = {{"M", 8192}, {"N", 8192}},
    .validate = RequirePositive, .spec = Spec, .tolerance = ExactTolerance, .cost = CostOf,
    .host_reference = pkf_ref_gnn_feature_exchange_run, .pkb_id = 65};
}  // namespace pkforge::kernels
