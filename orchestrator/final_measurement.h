// The job's result (issue #18 item 5): at the end of a job that ran normally,
// the orchestrator evaluates the agent's chosen candidate once more, fresh
// (a new executor run, not a stored result), at the job's own evaluation
// settings, and records it as the job's final measurement: an evaluation of
// role "final" with its evaluation_started / evaluation_finished events
// (final_measurement set), Job.final_* in the API. The best of many noisy
// measurements (Job.best_speedup) is kept beside it, not printed as the
// result.
//
// Contract
// - It runs after the agent, outside the job's wall budget (which has run
//   out by then), bounded by kFinalMeasurementTimeoutS and by the job's
//   explicit cancellation (CancelJob, shutdown): the job's own deadline does
//   not cut it short.
// - An evaluation without a result (executor gone, cancelled) is recorded as
//   such (no row, an evaluation_finished event saying why) and the job keeps
//   its outcome; only a failure to record (the store) is returned.
//
// Threading: called on the job's thread; uses the job's sink like the agent
// did (its calls are serialised because the agent has returned).
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "agent/cancel.h"
#include "agent/evaluator.h"
#include "agent/trajectory_sink.h"
#include "common/clock.h"
#include "pkforge/v1/orchestrator.pb.h"
#include "storage/store.h"

namespace pkforge::orchestrator {

inline constexpr double kFinalMeasurementTimeoutS = 600;

struct FinalMeasurementEnv {
  std::string job_id;
  v1::JobSpec spec;              // the job's (its eval settings are the official ones)
  std::string candidate_sha256;  // the agent's choice (AgentResult::best_candidate_sha256)
  storage::TrajectoryStore* store = nullptr;  // the candidate's source
  agent::Evaluator* evaluator = nullptr;
  agent::TrajectorySink* sink = nullptr;
  const agent::CancelToken* job_cancel = nullptr;  // its explicit cancellation stops it
  const Clock* clock = SystemClock::Get();
  // Milliseconds since the agent started, for the entries (the sink adds the
  // job's offsets as for the agent's own entries).
  std::function<int64_t()> elapsed_ms;
};

absl::Status MeasureFinal(const FinalMeasurementEnv& env);

}  // namespace pkforge::orchestrator
