// The rules an evaluation's configuration must satisfy, in one place for
// both sides of the API: the executor checks every Evaluate with them and the
// orchestrator checks every SubmitJob with them (a job's evaluations are
// built from its spec), so a job is refused at submission for exactly what
// its evaluations would be refused for, instead of "succeeding" with none.
//
// Depends only on the problem registry (kernels::kernels_registry), never on
// the judge, the worker or CUDA, so the orchestrator can link it.
//
// Field names: errors start with the field as the caller's API spells it
// (EvalFieldNames), e.g. "size: ..." on the executor and "spec.size: ..." on
// the orchestrator. A client string is never echoed in full: at most a short
// prefix (ClientText), so an error always fits in gRPC metadata.
//
// Memory bound: an evaluation holds, per side (reference and candidate), one
// slot of every rank's inputs and outputs per input set (at least 2) and per
// correctness trial (EvaluateRequest.trials, default 5), see
// kernels/harness/judge.cc. On the host all ranks share the machine; on cuda
// each rank's slots live on its GPU. A configuration whose lower bound exceeds
// the budget is refused before anything is compiled or run (INVALID_ARGUMENT
// naming the size), instead of failing as the candidate's RUNTIME_ERROR.
//
// Thread safety: pure functions over the immutable registry.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/harness/problem.h"
#include "pkforge/v1/executor.pb.h"

namespace pkforge::kernels {

// Limits of the device that runs the evaluation. Defaults are the executor's
// configuration defaults (executor/config.h); 0 memory = not checked.
struct EvalLimits {
  int max_host_world_size = 64;
  int max_trials = 100;
  int max_iters = 10'000;
  double max_timeout_s = 600;
  int64_t host_memory_bytes = 0;  // host backend: one evaluation, all ranks
  int64_t gpu_memory_bytes = 0;   // cuda: the smallest GPU
};

struct EvalFieldNames {
  std::string config;    // prefix of problem, backend, world_size, dtype, size
  std::string settings;  // prefix of trials, warmup_iters, timed_iters, timeout_s, sanitize, profile
};

// The trials the judge runs when a request leaves trials at 0.
inline constexpr int kDefaultTrials = 5;
// Longest problem name, size preset and dimension name accepted.
inline constexpr size_t kMaxNameBytes = 64;
inline constexpr int kMaxDims = 16;

// `s` for an error message: quoted, cut to `max` bytes (on a UTF-8 boundary)
// with the full length appended when cut, control characters escaped.
std::string ClientText(std::string_view s, size_t max = 48);

// Lower bounds of the memory one evaluation needs (see the top comment).
struct MemoryNeed {
  double host_bytes = 0;     // all ranks, both sides
  double per_gpu_bytes = 0;  // the busiest rank, both sides
};
MemoryNeed EstimateMemory(const Problem& p, const Dims& dims, int world, pkf_dtype dtype,
                          int trials);

// Problem, backend, world size, dtype, size (including the memory bound),
// trials, iterations, timeout, sanitize and profile (both need cuda:
// FAILED_PRECONDITION). Not checked here, because they depend on the
// executor's state or only it sees them: GPU availability, tools installed,
// source, flags and client_tag.
absl::Status ValidateEvaluation(const v1::EvaluateRequest& r, const EvalLimits& limits,
                                const EvalFieldNames& names = {});

}  // namespace pkforge::kernels
