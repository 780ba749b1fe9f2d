// JobManager::Job, the state of one admitted job (private to JobManager's
// .cc files: job_manager.cc, job_recovery.cc). Threading: the fields marked
// so are guarded by JobManager::mu_; the others are set before the job is
// shared and then read-only, or are thread-safe themselves (cancel,
// progress).
#pragma once

#include <cstdint>
#include <string>

#include "agent/cancel.h"
#include "orchestrator/job_manager.h"
#include "orchestrator/job_sink.h"

namespace pkforge::orchestrator {

struct JobManager::Job {
  Job(std::string id_in, v1::JobSpec spec_in, const Clock* clock)
      : id(std::move(id_in)), spec(std::move(spec_in)), run_spec(spec), cancel(clock) {}

  const std::string id;
  const v1::JobSpec spec;  // as submitted
  v1::JobSpec run_spec;    // what this attempt runs with (budgets left after a restart)
  agent::CancelToken cancel;
  JobProgress progress;
  JobSink::Offsets offsets;
  int attempt = 1;
  int64_t created_wall_us = 0;

  // Guarded by JobManager::mu_.
  v1::JobState state = v1::JOB_STATE_QUEUED;
  int64_t started_wall_us = 0;
  int64_t finished_wall_us = 0;
  int64_t attempt_start_mono_us = 0;  // 0 until this attempt runs
  std::string stop_reason;
  std::string error;
  bool cancel_requested = false;
  std::string cancel_reason;
  std::string end_pending;  // why the end is not stored yet ("" = not ending)
  // The client's own provider key (only where the operator allowed it): in
  // memory for this job's LLM calls, never in `spec`, the store or a log.
  std::string llm_api_key;
};

}  // namespace pkforge::orchestrator
