// JobManager: the life of every job -- admission, the FIFO queue, running
// agent loops on their own threads, cancellation, deadlines, final states,
// and recovery after a restart.
//
// Contract
// - Submit() validates the spec (INVALID_ARGUMENT naming the field;
//   FAILED_PRECONDITION when the API key variable is not set in this
//   process's environment; UNAVAILABLE when no executor is healthy), stores
//   the job (queued) and its first event before returning.
// - Idempotency: a non-empty client_request_id is stored with the job (the
//   database holds at most one job per id), so a repeated id returns the job
//   made by the first call -- its current state, finished or not -- also
//   after the orchestrator restarted; the spec of the repeat is not looked
//   at. A repeat that arrives while the first call is still storing the job
//   is ABORTED (retry). Lookup order: this process's map (which also turns
//   concurrent first calls into one), then the store; a CreateJob that loses
//   a race on the id to another writer returns that writer's job.
// - At most max_concurrent_jobs run at once; others wait in FIFO order.
// - Each running job has a CancelToken: CancelJob and shutdown cancel it
//   (aborting in-flight LLM calls and evaluations); it also carries the
//   manager's deadline (wall budget + wall_grace_s), a backstop behind the
//   agent's own wall budget.
// - Final states: agent OK -> succeeded (stop_reason from the agent), or
//   cancelled when it stopped because of CancelJob; agent error -> failed
//   (error; the state event's reason is "failed: <error>"); shutdown ->
//   interrupted ("shutdown"). The terminal event and the terminal row are one
//   write (storage::StepRows::job_state), and this process's view of the job
//   turns terminal before any watcher sees that event, so GetJob never says
//   running after WatchJob delivered the end.
// - A terminal write that fails (e.g. "database or disk is full") is retried
//   with bounded backoff (50 ms doubling to 2 s) until it succeeds or the
//   manager shuts down (the job then stays running in the database and is
//   recovered at the next start). Meanwhile GetJob shows the job running with
//   error "ending as <state>: recording its end failed (...); retrying", and
//   CancelJob still works: the end being retried becomes cancelled.
// - Cancel() returns the job after the cancel: it waits up to 5 s for a
//   running job to stop; a job still stopping then is returned running with
//   stop_reason "cancelling: <reason>".
// - Executors: a job waits for an executor that can run it (at its start and
//   for every evaluation) instead of failing, bounded by its budget (see
//   ExecutorPool). While it waits, its event log says why: an event
//   waiting_for_executor{waiting: true, reason}, then {waiting: false} when an
//   executor can run it again.
// - Recover() (at start, before serving): queued jobs are queued again; a
//   job whose terminal event was committed but whose row was not is
//   finished; running search/replay jobs restart from scratch as a new
//   attempt (recorded as a state event "attempt N"), continuing the same
//   trajectory with the budget that is left; other running jobs (llm: they
//   cost money and cannot resume a conversation) become interrupted with a
//   reason. Nothing already stored is changed or lost. Time is charged from
//   durable timestamps: a resumed attempt starts at the wall time since the
//   job first started (jobs.started_wall_us; the time the orchestrator was
//   down counts, as it does against a wall budget), never less than its last
//   event's elapsed_ms. Evaluations that had started but have no end event
//   get an evaluation_aborted event with the reason before anything else.
// - best_improved events of a job strictly improve on the job's best so far,
//   across concurrent evaluations and attempts (JobSink).
//
// Threading: all public methods are thread-safe. Each running job occupies
// one thread of its own (agent loops block on I/O); Submit/Cancel/Get never
// block on a running job.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "agent/agent.h"
#include "agent/cancel.h"
#include "common/clock.h"
#include "orchestrator/config.h"
#include "orchestrator/event_log.h"
#include "orchestrator/executor_pool.h"
#include "orchestrator/job_sink.h"
#include "orchestrator/metrics.h"
#include "pkforge/v1/orchestrator.pb.h"
#include "storage/store.h"

namespace pkforge::orchestrator {

class JobManager {
 public:
  struct Options {
    int max_concurrent_jobs = 64;
    // Bounds of the queue (OrchestratorConfig::max_queued_jobs/_spec_mib):
    // Submit answers RESOURCE_EXHAUSTED beyond either, storing nothing.
    int max_queued_jobs = 1024;
    int64_t max_queued_spec_bytes = int64_t{1} << 30;
    bool resume_jobs = true;
    double wall_grace_s = 5;
    agent::AgentOptions agent;
    const Clock* clock = SystemClock::Get();
    // The operator's LLM providers by name, and the directory replay jobs may
    // read from ("" = inline sources only). See OrchestratorConfig.
    std::vector<LlmProvider> providers;
    std::string replay_root;
  };

  JobManager(Options options, storage::TrajectoryStore* store, EventLog* log, ExecutorPool* pool,
             Metrics* metrics);
  ~JobManager();  // Shutdown("shutdown", 0) if not done

  absl::Status Recover();

  absl::StatusOr<v1::Job> Submit(const v1::SubmitJobRequest& request);
  absl::StatusOr<v1::Job> Get(const std::string& job_id);
  absl::StatusOr<v1::ListJobsResponse> List(const v1::ListJobsRequest& request);
  absl::StatusOr<v1::Job> Cancel(const std::string& job_id, const std::string& reason);

  // The spec checks of Submit(), exposed for tests and the CLI's dry runs.
  absl::Status Validate(const v1::JobSpec& spec) const { return Admit(spec).status(); }
  // What Submit() stores and runs: the spec with operator-chosen parts
  // resolved (the named provider's kind, URL and key variable; a replay
  // directory's real path under the replay root), after every check.
  absl::StatusOr<v1::JobSpec> Admit(const v1::JobSpec& spec) const;
  // The answer to a submission whose client_request_id already names job `id`.
  absl::StatusOr<v1::Job> Repeat(const std::string& id, const v1::SubmitJobRequest& request);

 private:
  absl::Status ValidateResolved(const v1::JobSpec& spec) const;

 public:

  // Stops admitting, cancels running jobs and waits up to `grace_s` for them
  // to end (as interrupted with `reason`); queued jobs stay queued in the
  // database and run after the next start. Idempotent.
  void Shutdown(const std::string& reason, double grace_s);

  std::map<std::string, int64_t> CountByState();

 private:
  struct Job;
  class JobEvaluator;

  void DispatchLocked();
  absl::Status QueueHasRoom(const v1::JobSpec& spec);
  // Records the end of a job that ran here, retrying a failed write (see the
  // contract); returns the state recorded (or left running at shutdown).
  v1::JobState EndJob(Job& job, v1::JobState state, std::string reason, std::string error);
  // Appends a waiting_for_executor event of the job.
  void ReportWait(Job& job, bool waiting, const std::string& reason);
  void RunJob(std::shared_ptr<Job> job);
  // RunJob's end: the state, reason and error of a job that ran here (mu_ held).
  v1::JobState EndStateLocked(Job& job, const absl::StatusOr<agent::AgentResult>& result,
                              std::string* reason, std::string* error);
  // Appends a state event and (unless terminal and already stored) moves the row.
  absl::Status Transition(Job& job, v1::JobState state, const std::string& reason,
                          const std::string& error);
  v1::Job Snapshot(const Job& job) const;
  absl::StatusOr<v1::Job> FromStore(const std::string& job_id);
  int64_t ElapsedMs(const Job& job) const;
  absl::Status RecoverOne(const storage::JobRecord& record);

  const Options options_;
  storage::TrajectoryStore* store_;
  EventLog* log_;
  ExecutorPool* pool_;
  Metrics* metrics_;

  mutable std::mutex mu_;
  std::condition_variable idle_cv_;  // running_ dropped
  // A job's state, cancel request or the shutdown flag changed.
  std::condition_variable state_cv_;
  std::map<std::string, std::shared_ptr<Job>> active_;  // queued or running here
  std::deque<std::shared_ptr<Job>> queue_;
  // client_request_id -> job id ("" = reserved by a call storing it). A cache
  // of the store's jobs.client_request_id plus in-flight reservations.
  std::map<std::string, std::string> request_ids_;
  std::map<std::string, int64_t> finished_;  // by state name, since start
  int running_ = 0;
  bool accepting_ = true;
  bool shutting_down_ = false;
  std::string shutdown_reason_;
};

}  // namespace pkforge::orchestrator
