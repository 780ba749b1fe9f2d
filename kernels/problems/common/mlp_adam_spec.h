// Shapes, input ranges, tolerance and cost model shared by ddp, zero1 and
// zero2 (ParallelKernelBench 40-42; the oracle is common/mlp_adam_host.h).
// Trusted (compiled into pkforge_kernels only). Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "kernels/problems/common/spec_util.h"

namespace pkforge::kernels {

// PKB's MLP from the base shape (M, N): global batch round_up(max(M, world),
// world) split evenly, din = clamp(N, 16, 256), hidden = clamp(N/2, 32, 512),
// dout = clamp(N/4, 8, 256); for the ZeRO problems hidden grows by one until
// the parameter count P divides by world (PKB's _ddp_mlp_shapes_divisible_by_dp).
struct MlpShape {
  int64_t rows, din, hid, dout, p, part;
};
inline MlpShape MlpShapeOf(const Dims& d, int world, bool sharded) {
  MlpShape s{};
  const int64_t m = d.at("M"), n = d.at("N");
  s.rows = (std::max<int64_t>(m, world) + world - 1) / world;
  s.din = std::max<int64_t>(16, std::min<int64_t>(n, 256));
  s.hid = std::max<int64_t>(32, std::min<int64_t>(n / 2, 512));
  s.dout = std::max<int64_t>(8, std::min<int64_t>(n / 4, 256));
  const auto count = [&] { return s.hid * s.din + s.hid + s.dout * s.hid + s.dout; };
  if (sharded)
    while (count() % world != 0) ++s.hid;
  s.p = count();
  s.part = sharded ? s.p / world : s.p;
  return s;
}

// zero1/zero2: the search for a hidden size above ends only when gcd(din +
// dout + 1, world) divides dout (count = hid * (din + dout + 1) + dout mod
// world); e.g. N=36 (din 36, dout 9) at world 2 never does, so such dims are
// refused here instead of hanging whoever asks for the shapes (found by the
// hidden-shape draws of kernels/harness/shape_family_test).
inline absl::Status ValidateShardedMlp(const Dims& d, int world) {
  RETURN_IF_ERROR(RequirePositive(d, world));
  const int64_t n = d.at("N");
  const int64_t din = std::max<int64_t>(16, std::min<int64_t>(n, 256));
  const int64_t dout = std::max<int64_t>(8, std::min<int64_t>(n / 4, 256));
  const int64_t g = std::gcd(din + dout + 1, static_cast<int64_t>(world));
  if (dout % g != 0)
    return absl::InvalidArgumentError(
        "N=" + std::to_string(n) + " at world size " + std::to_string(world) +
        ": no hidden size makes the parameter count divisible by the world size (din " +
        std::to_string(din) + ", dout " + std::to_string(dout) + ")");
  return absl::OkStatus();
}

// Inputs: the parameters (rank 0 only) and the optimizer state in declared
// ranges, so the step is smooth in the gradient (exp_avg_sq >= 1e-4: no
// division by ~0, unlike Adam's first step from zero state) and the ReLU mask
// is decided by b1's sign with a margin of 12 standard deviations of X W1^T
// (|b1| in [1, 2), |W1| < 0.25/sqrt(din)), so summation order never flips it.
inline RankSpec MlpAdamSpec(const Dims& d, int world, int rank, bool sharded) {
  const MlpShape s = MlpShapeOf(d, world, sharded);
  const int64_t r0 = rank == 0 ? 1 : 0, state = sharded ? s.part : s.p * r0;
  const double a = 0.25 / std::sqrt(double(s.din));
  RankSpec spec;
  spec.in = {{"X", {s.rows, s.din}},
             {"y", {s.rows, s.dout}},
             FloatInput("W1", {s.hid * r0, s.din}, -a, a),
             FloatInput("b1", {s.hid * r0}, 1.0, 2.0, /*mirrored=*/true),
             {"W2", {s.dout * r0, s.hid}},
             {"b2", {s.dout * r0}},
             FloatInput(sharded ? "exp_avg_part" : "exp_avg", {state}, -0.02, 0.02),
             FloatInput(sharded ? "exp_avg_sq_part" : "exp_avg_sq", {state}, 1e-4, 4e-4)};
  spec.out = {{"params", {s.p}},
              {sharded ? "exp_avg_part" : "exp_avg", {s.part}},
              {sharded ? "exp_avg_sq_part" : "exp_avg_sq", {s.part}}};
  return spec;
}

// Gradients may be computed and reduced in the dtype (PyTorch's bf16 path:
// GEMM outputs rounded, NCCL sums in bf16), which costs about k = max(1,
// world/2) roundings of partial sums: relative error of g ~ k ulps; exp_avg'
// inherits it, exp_avg_sq' twice (g^2): rtol 2 base k. The absolute floor is
// for exp_avg' near zero (0.9 m cancelling 0.1 g): 0.1 of g's error, which is
// ~base k of the largest gradients (|g| ~ 1, db1). Measured with an honest
// bf16 pipeline (every intermediate and each rank's partial sum rounded to
// bf16): base k / 100 failed 1 element in ~40k at world 1 and 3.
inline Tolerance MlpAdamTolerance(const Dims&, int world, pkf_dtype dt) {
  const double k = std::max(1.0, world / 2.0), base = BaseTolerance(dt);
  return {base * k * 0.1, 2 * base * k};
}

// Interconnect: broadcast of the parameters (ddp: and of the state) from
// rank 0, plus ddp: all-reduce of the gradient; zero1: all-reduce + all-gather
// of the updated shards; zero2: reduce-scatter + all-gather.
inline Cost MlpAdamCost(const Dims& d, int n, int64_t es, int kind) {
  const MlpShape s = MlpShapeOf(d, n, kind != 0);
  const double p = double(s.p) * es, f = n > 1 ? double(n - 1) / n : 0.0;
  const double net = kind == 0 ? 3 * p * f + 2 * p * f : kind == 1 ? p * f + 2 * p * f + p * f
                                                                   : p * f + p * f + p * f;
  const double gemm = 2.0 * s.rows * (s.din * s.hid + s.hid * s.dout);
  // X, y once; f32 activations: h written and read twice, d h written and
  // read twice, d out written and read twice; parameters, f32 gradient (write,
  // reduce, read) and state.
  const double act = 4.0 * s.rows * (5.0 * s.hid + 3.0 * s.dout);
  const double hbm = double(s.rows) * (s.din + s.dout) * es + act + 2.0 * p + 12.0 * s.p + 6.0 * s.part * es;
  return {p, kind == 2 ? BusFactorGather(n) : BusFactorAllreduce(n), net, hbm, 3 * gemm + 12.0 * s.part};
}

}  // namespace pkforge::kernels
