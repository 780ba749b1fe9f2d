// The problem plug-in interface (nccl-tests style) and the registry.
//
// A problem is trusted code: one `Problem` value of plain data and function
// pointers, defined in kernels/problems/<name>/spec.cc (PKF_DEFINE_PROBLEM)
// and listed once, in kernels/problems/problems.list (registry.cc is
// generated from it). The harness never special-cases a problem by name; everything
// it needs (shapes per rank, which tensors are replicated, tolerances, cost
// model, host reference) comes from here.
//
// Thread safety: the registry is built once (function-local static) and is
// immutable afterwards; every function here is pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/harness/rng.h"
#include "pkforge/candidate.h"

namespace pkforge::kernels {

using Dims = std::map<std::string, int64_t>;

struct TensorDesc {
  std::string name;
  std::vector<int64_t> shape;
  bool replicated = false;  // generated identically on every rank (inputs only)
  // A fixed dtype (i32/i64 ids, indices, splits, labels) independent of the
  // evaluation's float dtype; unset = the evaluation's dtype.
  std::optional<pkf_dtype> dtype;
  // Integer inputs: values uniform in [lo, hi) (GenInt, harness/rng.h), from
  // the evaluation's seed like every input. Float inputs: a declared range in
  // fixed point (FloatInput; GenFloat, harness/rng.h); lo == hi (the default)
  // is uniform in [-1, 1).
  int64_t lo = 0;
  int64_t hi = 0;
};

// An integer input of `dtype` with values uniform in [lo, hi).
inline TensorDesc IntInput(std::string name, std::vector<int64_t> shape, pkf_dtype dtype,
                           int64_t lo, int64_t hi, bool replicated = false) {
  return {std::move(name), std::move(shape), replicated, dtype, lo, hi};
}
// A float input (the evaluation's dtype) uniform in [lo, hi) before rounding
// to the dtype (which may reach hi); mirrored: magnitude in [lo, hi) with a
// random sign (0 <= lo < hi), a range with a gap around zero. Optimizer state
// that must be positive (Adam's exp_avg_sq) or values whose sign must not
// flip under rounding (a bias that decides a ReLU mask) are declared so.
// Bounds are rounded to the 2^-24 grid; |lo|, |hi| < 2^29.
inline TensorDesc FloatInput(std::string name, std::vector<int64_t> shape, double lo, double hi,
                             bool mirrored = false, bool replicated = false) {
  const auto fx = [](double x) { return static_cast<int64_t>(x * kFloatRangeScale + (x < 0 ? -0.5 : 0.5)); };
  const int64_t a = fx(lo), b = fx(hi);
  return {std::move(name), std::move(shape), replicated, std::nullopt, mirrored ? b : a, mirrored ? a : b};
}
// An output of a fixed dtype (integers compare exactly).
inline TensorDesc TypedOutput(std::string name, std::vector<int64_t> shape, pkf_dtype dtype) {
  return {std::move(name), std::move(shape), false, dtype, 0, 0};
}
inline bool IsIntegerDtype(pkf_dtype d) { return d == PKF_I32 || d == PKF_I64 || d == PKF_U8; }

// Tensors of one rank; a tensor without a fixed dtype has the evaluation's dtype.
struct RankSpec {
  std::vector<TensorDesc> in;
  std::vector<TensorDesc> out;
};

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

// Per-rank cost of one call (the busiest rank), nccl-tests conventions.
struct Cost {
  double alg_bytes = 0;           // "size" of the collective for algbw = size / time
  double bus_factor = 1;          // busbw = algbw * bus_factor
  double interconnect_bytes = 0;  // bytes that must cross the interconnect, per rank
  double hbm_bytes = 0;           // memory traffic, per rank
  double flops = 0;               // per rank
};

struct Problem {
  std::string_view name;
  std::string_view category;  // collective | tp-fusion | ...
  std::vector<std::string> dims;
  Dims tiny;
  Dims default_size;  // ParallelKernelBench's shapes (comparable numbers)
  Dims large;         // bandwidth/compute-bound shapes (the "large" preset)
  int min_world = 1;
  int max_world = 8;
  std::vector<pkf_dtype> dtypes = {PKF_BF16, PKF_F16, PKF_F32};
  std::vector<std::string> forbidden_calls;  // flagged by the static scan
  // Returns an error when `dims` cannot be used at `world` (divisibility...).
  absl::Status (*validate)(const Dims& dims, int world) = nullptr;
  RankSpec (*spec)(const Dims& dims, int world, int rank) = nullptr;
  Tolerance (*tolerance)(const Dims& dims, int world, pkf_dtype dtype) = nullptr;
  Cost (*cost)(const Dims& dims, int world, int64_t elem_bytes) = nullptr;
  // Host reference with the candidate ABI (reference_host.cc compiled into the
  // worker under a renamed symbol). It is also the oracle for the cuda side.
  pkf_run_fn host_reference = nullptr;
  // ParallelKernelBench's problem number (reference/<id>_*.py); 0 = not from PKB.
  int pkb_id = 0;
};

// All registered problems, in registry order.
const std::vector<const Problem*>& Problems();
absl::StatusOr<const Problem*> FindProblem(std::string_view name);

// The problem table of kernels/README.md (Markdown, one row per problem in
// registry order); kernels_unit_test checks the README's copy is current and
// `pkforge-worker list --markdown` prints it.
std::string ProblemTableMarkdown();

// prompt.md and reference_host.cc of a problem, embedded at build time.
std::string_view ProblemPrompt(std::string_view name);
std::string_view ProblemReferenceSource(std::string_view name);

// "tiny" | "default" | "large" | "K=V,K=V" (overrides on top of default).
// True for the names of the size presets every problem has.
bool IsSizePreset(std::string_view size);
absl::StatusOr<Dims> ResolveSize(const Problem& p, std::string_view size, int world);
std::string DimsToString(const Dims& dims);

// Base tolerance of a dtype (bf16 1e-2, f16 1e-3, f32 1e-5).
double BaseTolerance(pkf_dtype dtype);
// Tolerance for a sum of `terms` values of magnitude ~`magnitude` where a
// correct implementation may round partial sums to the dtype (NCCL rings do).
Tolerance ReductionTolerance(pkf_dtype dtype, double terms, double magnitude);

absl::StatusOr<pkf_dtype> ParseDtype(std::string_view s);
std::string_view DtypeName(pkf_dtype d);
int64_t DtypeSize(pkf_dtype d);

}  // namespace pkforge::kernels
