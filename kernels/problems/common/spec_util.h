// Helpers for problem specs (trusted, compiled into pkforge_kernels only).
// Thread safety: pure functions.
#pragma once

#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "common/status.h"
#include "kernels/harness/problem.h"

// Declares the renamed host reference of problem NAME (reference_host.cc is
// compiled with -Dpkf_run=pkf_ref_NAME_run, see kernels/CMakeLists.txt).
#define PKF_DECLARE_HOST_REFERENCE(NAME)                                                         \
  extern "C" int pkf_ref_##NAME##_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, \
                                      int32_t, void*)

namespace pkforge::kernels {

// Defines problem NAME's registry entry (in spec.cc, inside namespace
// pkforge::kernels): `PKF_DEFINE_PROBLEM(allreduce) = {...};`. registry.cc
// lists every kProblem_<name> of kernels/problems/problems.list.
#define PKF_DEFINE_PROBLEM(NAME)            \
  extern const Problem kProblem_##NAME; \
  const Problem kProblem_##NAME

inline absl::Status RequireDivisible(const Dims& d, const std::string& dim, int64_t by) {
  if (d.at(dim) <= 0) return absl::InvalidArgumentError("dimension " + dim + " must be positive");
  if (d.at(dim) % by != 0)
    return absl::InvalidArgumentError("dimension " + dim + "=" + std::to_string(d.at(dim)) +
                                      " must be divisible by " + std::to_string(by));
  return absl::OkStatus();
}

inline absl::Status RequirePositive(const Dims& d, int /*world*/) {
  for (const auto& [k, v] : d)
    if (v <= 0) return absl::InvalidArgumentError("dimension " + k + " must be positive");
  return absl::OkStatus();
}

inline Tolerance ExactTolerance(const Dims&, int, pkf_dtype) { return {0, 0}; }
inline Tolerance WorldSumTolerance(const Dims&, int world, pkf_dtype dt) {
  return ReductionTolerance(dt, world, 1.0);
}
inline double BusFactorAllreduce(int n) { return n > 1 ? 2.0 * (n - 1) / n : 0.0; }
inline double BusFactorGather(int n) { return n > 1 ? double(n - 1) / n : 0.0; }

}  // namespace pkforge::kernels
