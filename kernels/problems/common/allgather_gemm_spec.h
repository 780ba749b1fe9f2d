// Shapes, tolerance and cost model shared by allgather_gemm (B replicated,
// PKB 12) and allgather_gemm_at (rank r's own B, PKB 11): the same product
// y [M, N] = allgather(A_r [M, K/world] along K) @ B [K, N] on every rank.
// Trusted (compiled into the registry only). Thread safety: pure functions.
#pragma once

#include <cmath>

#include "kernels/problems/common/spec_util.h"

namespace pkforge::kernels {

inline absl::Status AllgatherGemmValidate(const Dims& d, int w) {
  RETURN_IF_ERROR(RequirePositive(d, w));
  return RequireDivisible(d, "K", w);
}
inline RankSpec AllgatherGemmSpec(const Dims& d, int w, bool b_replicated) {
  return {{{"A", {d.at("M"), d.at("K") / w}}, {"B", {d.at("K"), d.at("N")}, b_replicated}},
          {{"y", {d.at("M"), d.at("N")}}}};
}
inline Tolerance AllgatherGemmTolerance(const Dims& d, int, pkf_dtype dt) {
  return ReductionTolerance(dt, 1, std::sqrt(double(d.at("K"))) / 2);
}
// The all-gather moves the M x K activation; the GEMM is the full M x N x K.
inline Cost AllgatherGemmCost(const Dims& d, int n, int64_t es) {
  const double m = d.at("M"), nn = d.at("N"), k = d.at("K");
  return {m * k * es, BusFactorGather(n), BusFactorGather(n) * m * k * es,
          (m * k + k * nn + m * nn) * es, 2 * m * nn * k};
}

}  // namespace pkforge::kernels
