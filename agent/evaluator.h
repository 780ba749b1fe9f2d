// Evaluator: how an agent loop gets a candidate evaluated. The agent module
// never talks to executors itself (design section 1: agent depends only on
// common and proto); the orchestrator implements this on top of its executor
// pool (gRPC Executor.Evaluate), tests implement it with fakes.
//
// Contract
// - Evaluate() blocks until the evaluation ends and returns its result. Every
//   outcome of the *candidate* (compile error, wrong output, timeout, cheat
//   detected, ...) is a result with the matching EvaluationResult.status, not
//   an error.
// - A non-OK status means no result exists: UNAVAILABLE / INTERNAL for
//   infrastructure failures (no executor reachable, executor restarted), or
//   the token's status (CANCELLED / DEADLINE_EXCEEDED) when `cancel` fired. An
//   implementation must return within ~100 ms of cancellation (and of the
//   token's deadline, which it should propagate as its RPC deadline) and cancel
//   the remote evaluation.
// - `progress` (may be empty) receives the executor's progress messages
//   (compiling, queued, running) before the call returns; never the result.
// - queue_ms is all time the evaluation waited for a device: in the
//   dispatcher's own queue plus the executor's queue. The agent records it
//   next to elapsed time so "active" time can be analysed (design section 9).
//
// Threading: Evaluate() is called concurrently, from several threads of one
// job (best_of_n, tree, parallel search) and from many jobs; implementations
// must be thread-safe. `progress` runs on an implementation thread and must be
// cheap.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "agent/cancel.h"
#include "agent/trajectory_sink.h"
#include "pkforge/v1/executor.pb.h"

namespace pkforge::agent {

struct EvaluationOutcome {
  v1::EvaluationResult result;
  std::string executor;  // address or name of the executor that ran it
  double queue_ms = 0;   // dispatcher + executor queue time
};

using ProgressCallback = std::function<void(const v1::EvaluateProgress&)>;

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual absl::StatusOr<EvaluationOutcome> Evaluate(const v1::EvaluateRequest& request,
                                                     const ProgressCallback& progress,
                                                     const CancelToken& cancel) = 0;
};

// Writes what Evaluate() returned into the trajectory entry of that
// evaluation: on success the result, the executor, its queue time and the
// compile and run times of the result's stages; otherwise the error, its
// message passed through RedactSecrets(), and -- when `cancel` has fired --
// the token's own status (cancel reason or deadline) in place of whatever the
// evaluator made of it. The result is moved out of `outcome` (its ok() is
// unchanged); the entry's other fields are left as they are. One
// copy for the agents (JobContext) and the orchestrator's final measurement.
void FillFromOutcome(absl::StatusOr<EvaluationOutcome>& outcome, const CancelToken& cancel,
                     EvaluationEntry& entry);

}  // namespace pkforge::agent
