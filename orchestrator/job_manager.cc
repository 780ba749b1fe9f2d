#include "orchestrator/job_manager.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "common/ids.h"
#include "common/status.h"
#include "fmt/format.h"
#include "orchestrator/convert.h"
#include "orchestrator/final_measurement.h"
#include "orchestrator/job_manager_job.h"
#include "spdlog/spdlog.h"

namespace pkforge::orchestrator {

// The job's view of the executor pool: dispatch waits become the job's
// waiting_for_executor events.
class JobManager::JobEvaluator final : public agent::Evaluator,
                                       public ExecutorPool::WaitObserver {
 public:
  JobEvaluator(JobManager* manager, Job* job) : manager_(manager), job_(job) {}

  absl::StatusOr<agent::EvaluationOutcome> Evaluate(const v1::EvaluateRequest& request,
                                                    const agent::ProgressCallback& progress,
                                                    const agent::CancelToken& cancel) override {
    return manager_->pool_->Evaluate(request, progress, cancel, this);
  }

  // Several evaluations of one job may wait at once: the first to wait and
  // the last to stop waiting speak for all of them. Holding wait_mu_ while
  // appending keeps the events in that order.
  void WaitStarted(const std::string& reason) override {
    std::lock_guard lock(wait_mu_);
    if (waiting_++ == 0) manager_->ReportWait(*job_, true, reason);
  }
  void WaitEnded(const std::string& executor) override {
    std::lock_guard lock(wait_mu_);
    if (--waiting_ == 0) {
      manager_->ReportWait(*job_, false,
                           executor.empty() ? "stopped waiting"
                                            : "executor " + executor + " can run it");
    }
  }

 private:
  JobManager* const manager_;
  Job* const job_;
  std::mutex wait_mu_;
  int waiting_ = 0;
};

JobManager::JobManager(Options options, storage::TrajectoryStore* store, EventLog* log,
                       ExecutorPool* pool, Metrics* metrics)
    : options_(std::move(options)), store_(store), log_(log), pool_(pool), metrics_(metrics) {}

JobManager::~JobManager() { Shutdown("shutdown", 1e9); }

// ----------------------------------------------------------------- submit

// A repeat of a submission must be the same submission: the job its id
// already names, when the spec (admitted as the first one was) is the same;
// ALREADY_EXISTS otherwise. (API fuzzing, session 16: a different spec
// under a used id got the old job with OK, the new spec silently dropped.)
absl::StatusOr<v1::Job> JobManager::Repeat(const std::string& id,
                                           const v1::SubmitJobRequest& request) {
  ASSIGN_OR_RETURN(v1::Job prior, Get(id));
  absl::StatusOr<v1::JobSpec> admitted = Admit(request.spec());
  if (admitted.ok() &&
      google::protobuf::util::MessageDifferencer::Equals(*admitted, prior.spec()))
    return prior;
  return absl::AlreadyExistsError(fmt::format(
      "client_request_id: already used for job {} with a different spec{}", id,
      admitted.ok() ? "" : " (and this one is invalid: " + admitted.status().ToString() + ")"));
}

absl::StatusOr<v1::Job> JobManager::Submit(const v1::SubmitJobRequest& request) {
  const std::string& rid = request.client_request_id();
  if (rid.size() > 256) return InvalidField("client_request_id", "longer than 256 characters");
  {
    std::unique_lock lock(mu_);
    if (!accepting_) return absl::UnavailableError("the orchestrator is shutting down");
    if (!rid.empty()) {
      // The in-memory map answers repeats within this process cheaply and,
      // through the reservation, turns concurrent first calls into one.
      auto it = request_ids_.find(rid);
      if (it != request_ids_.end()) {
        const std::string id = it->second;
        lock.unlock();
        if (!id.empty()) return Repeat(id, request);
        // A concurrent first call is still storing the job.
        return absl::AbortedError(
            "client_request_id: a submission with this id is in progress; retry");
      }
      request_ids_[rid] = "";  // reserved
    }
  }
  auto release = [&] {
    if (rid.empty()) return;
    std::lock_guard lock(mu_);
    if (request_ids_[rid].empty()) request_ids_.erase(rid);
  };
  // The job a previous process (or another writer of the database) made for
  // this id. Remembered in the map so later repeats skip the store.
  auto existing = [&]() -> absl::StatusOr<std::optional<std::string>> {
    ASSIGN_OR_RETURN(std::optional<storage::JobRecord> found,
                     store_->FindJobByClientRequestId(rid));
    if (!found.has_value()) return std::optional<std::string>();
    {
      std::lock_guard lock(mu_);
      request_ids_[rid] = found->id;
    }
    return std::optional<std::string>(found->id);
  };
  if (!rid.empty()) {
    absl::StatusOr<std::optional<std::string>> prior = existing();
    if (!prior.ok()) {
      release();
      return Annotate(prior.status(), "looking up client_request_id");
    }
    if (prior->has_value()) return Repeat(**prior, request);
  }
  absl::StatusOr<v1::JobSpec> admitted = Admit(request.spec());
  if (!admitted.ok()) {
    release();
    return admitted.status();
  }
  if (absl::Status room = QueueHasRoom(*admitted); !room.ok()) {
    release();
    return room;
  }
  const std::string id = NewId("job");
  auto job = std::make_shared<Job>(id, *admitted, options_.clock);
  if (admitted->agent().kind() == v1::AGENT_KIND_LLM) {
    job->llm_api_key = request.spec().agent().llm().api_key();
  }
  job->created_wall_us = options_.clock->NowWallMicros();
  auto record = NewJobRecord(id, *admitted, job->created_wall_us);
  if (record.ok()) record->client_request_id = rid;
  absl::Status s = record.ok() ? store_->CreateJob(*record) : record.status();
  if (absl::IsAlreadyExists(s) && !rid.empty()) {
    // Another writer stored a job for this id since the lookup above.
    absl::StatusOr<std::optional<std::string>> prior = existing();
    if (prior.ok() && prior->has_value()) return Get(**prior);
  }
  if (s.ok()) {
    v1::Event ev;
    ev.set_job_id(id);
    ev.mutable_state_changed()->set_state(v1::JOB_STATE_QUEUED);
    ev.mutable_state_changed()->set_reason("submitted");
    s = log_->Append(std::move(ev)).status();
  }
  if (!s.ok()) {
    release();
    return Annotate(s, "storing the job");
  }
  if (metrics_ != nullptr) metrics_->JobSubmitted();
  spdlog::info("job {} submitted: {} {} ws={} agent={}", id, admitted->problem(),
               BackendName(admitted->backend()), admitted->world_size(),
               AgentKindName(admitted->agent().kind()));
  std::lock_guard lock(mu_);
  if (!rid.empty()) request_ids_[rid] = id;
  active_[id] = job;
  queue_.push_back(job);
  v1::Job out = Snapshot(*job);
  DispatchLocked();
  return out;
}

// Whether a job that may have to wait fits the queue's bounds (a job that
// starts at once waits in no queue). Checked before anything is stored; two
// submissions at the same instant may both pass (a bound off by the
// handler threads, never unbounded).
absl::Status JobManager::QueueHasRoom(const v1::JobSpec& spec) {
  std::lock_guard lock(mu_);
  if (running_ < options_.max_concurrent_jobs && queue_.empty()) return absl::OkStatus();
  int64_t bytes = static_cast<int64_t>(spec.ByteSizeLong());
  for (const auto& q : queue_) bytes += static_cast<int64_t>(q->spec.ByteSizeLong());
  if (static_cast<int>(queue_.size()) >= options_.max_queued_jobs)
    return absl::ResourceExhaustedError(
        fmt::format("the job queue is full: {} jobs wait for one of {} slots (max_queued_jobs "
                    "{}); retry later",
                    queue_.size(), options_.max_concurrent_jobs, options_.max_queued_jobs));
  if (bytes > options_.max_queued_spec_bytes)
    return absl::ResourceExhaustedError(
        fmt::format("the job queue is full: its jobs' specs would take {} MiB (max_queued_spec_mib "
                    "{}); retry later, or send fewer or smaller replay sources",
                    bytes >> 20, options_.max_queued_spec_bytes >> 20));
  return absl::OkStatus();
}

void JobManager::DispatchLocked() {
  while (accepting_ && running_ < options_.max_concurrent_jobs && !queue_.empty()) {
    std::shared_ptr<Job> job = queue_.front();
    queue_.pop_front();
    ++running_;
    std::thread([this, job] { RunJob(job); }).detach();
  }
}

// -------------------------------------------------------------------- run

int64_t JobManager::ElapsedMs(const Job& job) const {
  if (job.attempt_start_mono_us == 0) return job.offsets.elapsed_ms;
  return job.offsets.elapsed_ms +
         (options_.clock->NowMonotonicMicros() - job.attempt_start_mono_us) / 1000;
}

absl::Status JobManager::Transition(Job& job, v1::JobState state, const std::string& reason,
                                    const std::string& error) {
  int64_t elapsed;
  const int64_t now = options_.clock->NowWallMicros();
  {
    std::lock_guard lock(mu_);
    if (state == v1::JOB_STATE_RUNNING) {
      job.state = state;
      if (job.started_wall_us == 0) job.started_wall_us = now;
    }
    elapsed = ElapsedMs(job);
  }
  v1::Event ev;
  ev.set_job_id(job.id);
  ev.set_elapsed_ms(elapsed);
  ev.mutable_state_changed()->set_state(state);
  ev.mutable_state_changed()->set_reason(reason);
  // The event and the row are one write; this process's view changes after
  // the commit and before any watcher sees the event.
  storage::JobStateChange change{FromProtoState(state), error, now};
  auto committed = [&](const v1::Event&) {
    std::lock_guard lock(mu_);
    job.state = state;
    if (IsTerminal(state)) {
      job.finished_wall_us = now;
      job.stop_reason = reason;
      job.error = error;
      job.end_pending.clear();
    }
    state_cv_.notify_all();
  };
  return log_->Append(std::move(ev), {.job_state = &change}, committed).status();
}

void JobManager::ReportWait(Job& job, bool waiting, const std::string& reason) {
  v1::Event ev;
  ev.set_job_id(job.id);
  {
    std::lock_guard lock(mu_);
    ev.set_elapsed_ms(ElapsedMs(job));
  }
  ev.mutable_waiting_for_executor()->set_waiting(waiting);
  ev.mutable_waiting_for_executor()->set_reason(reason);
  if (waiting) spdlog::warn("job {} waits for an executor: {}", job.id, reason);
  // A failure here is the store's, and the agent's own next write reports it.
  if (absl::Status s = log_->Append(std::move(ev)).status(); !s.ok()) {
    spdlog::warn("job {}: recording a wait failed: {}", job.id, s.ToString());
  }
}

v1::JobState JobManager::EndJob(Job& job, v1::JobState state, std::string reason,
                                std::string error) {
  auto backoff = std::chrono::milliseconds(50);
  for (int tries = 1;; ++tries) {
    absl::Status s = Transition(job, state, reason, error);
    if (s.ok()) return state;
    if (absl::IsFailedPrecondition(s)) {
      // Already terminal in the database (e.g. an earlier try committed and
      // only its reply was lost): nothing left to record.
      spdlog::warn("job {}: its end is already recorded ({})", job.id, s.ToString());
      std::lock_guard lock(mu_);
      job.state = state;
      job.end_pending.clear();
      state_cv_.notify_all();
      return state;
    }
    std::unique_lock lock(mu_);
    job.end_pending = fmt::format("ending as {}: recording its end failed ({}); retrying",
                                  ProtoStateName(state), AsStd(s.message()));
    if (tries == 1 || tries % 20 == 0) {
      spdlog::error("job {}: recording its end failed (try {}): {}; retrying", job.id, tries,
                    s.ToString());
    }
    state_cv_.notify_all();
    state_cv_.wait_for(lock, backoff, [&] {
      return shutting_down_ || (job.cancel_requested && state != v1::JOB_STATE_CANCELLED);
    });
    if (shutting_down_) {
      // Left running in the database: the next start recovers it.
      spdlog::error("job {}: shutting down before its end ({}) could be recorded", job.id,
                    ProtoStateName(state));
      return v1::JOB_STATE_RUNNING;
    }
    if (job.cancel_requested && state != v1::JOB_STATE_CANCELLED) {
      // CancelJob while the end waits to be stored: the end becomes the cancel.
      const std::string was = fmt::format(
          " (it had ended as {}{}{}; that end could not be stored)", ProtoStateName(state),
          error.empty() ? "" : ": ", error.substr(0, 512));
      state = v1::JOB_STATE_CANCELLED;
      reason = (job.cancel_reason.empty() ? "cancelled" : "cancelled: " + job.cancel_reason) + was;
      error.clear();
    }
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
}

// A shutdown, a cancel, the agent's result or failure; all refused: failed.
v1::JobState JobManager::EndStateLocked(Job& job, const absl::StatusOr<agent::AgentResult>& result,
                                        std::string* reason, std::string* error) {
  v1::JobState state;
  const bool cancelled = job.cancel_requested;
  const bool shutdown = shutting_down_ && !cancelled && job.cancel.ExplicitlyCancelled();
  if (shutdown) {
    state = v1::JOB_STATE_INTERRUPTED;
    *reason = *error = shutdown_reason_;
  } else if (cancelled) {
    // A cancel that came before the job ended wins, whatever the agent
    // made of it: a replay agent whose last evaluation the cancel cut
    // short ended "nothing left to try", and the job read SUCCEEDED (API
    // fuzzing, session 16).
    state = v1::JOB_STATE_CANCELLED;
    *reason = job.cancel_reason.empty() ? "cancelled" : "cancelled: " + job.cancel_reason;
  } else if (result.ok()) {
    state = v1::JOB_STATE_SUCCEEDED;
    *reason = result->stop_reason;
    // The manager's backstop deadline fired rather than the agent's budget.
    if (result->stop == agent::StopReason::kCancelled) *reason = "wall budget";
  } else if (job.cancel.status().code() == absl::StatusCode::kDeadlineExceeded) {
    state = v1::JOB_STATE_SUCCEEDED;
    *reason = "wall budget";
  } else {
    state = v1::JOB_STATE_FAILED;
    *error = std::string(result.status().message());
    // The real reason, not just "failed" (bounded: it is repeated in lists).
    *reason = "failed: " + (error->size() > 1024 ? error->substr(0, 1024) + "..." : *error);
  }
  // Every evaluation refused by the executors (a configuration they never
  // run): the job failed, whatever the agent made of having no result.
  const ProgressSnapshot progress = job.progress.Get();
  if (state == v1::JOB_STATE_SUCCEEDED && progress.evaluations == 0 && progress.refused > 0) {
    state = v1::JOB_STATE_FAILED;
    *error = fmt::format("every evaluation ({}) was refused by the executor: {}",
                         progress.refused, progress.first_refusal);
    *reason = *error;
  }
  return state;
}

void JobManager::RunJob(std::shared_ptr<Job> job) {
  bool spent = false;
  {
    std::lock_guard lock(mu_);
    if (job->attempt > 1 && job->started_wall_us > 0) {
      // Charge the time since the job first started from the durable start
      // time, not from its last event: whatever ran after that event, the
      // downtime and the wait in this queue all count (issue #15).
      const int64_t since_start_ms =
          (options_.clock->NowWallMicros() - job->started_wall_us) / 1000;
      job->offsets.elapsed_ms = std::max(job->offsets.elapsed_ms, since_start_ms);
      const double wall = job->spec.budget().wall_seconds();
      if (wall > 0) {
        const double left = wall - static_cast<double>(job->offsets.elapsed_ms) / 1e3;
        spent = left <= 0;
        job->run_spec.mutable_budget()->set_wall_seconds(std::max(left, 0.001));
      }
    }
    job->attempt_start_mono_us = options_.clock->NowMonotonicMicros();
  }
  std::string start_reason =
      job->attempt == 1
          ? "started"
          : fmt::format("attempt {}: restarted from scratch after an orchestrator restart "
                        "(turns and evaluations continue from {} and {} ms)",
                        job->attempt, job->offsets.turn_index, job->offsets.elapsed_ms);
  absl::Status status = spent ? absl::OkStatus()
                              : Transition(*job, v1::JOB_STATE_RUNNING, start_reason, "");
  absl::StatusOr<agent::AgentResult> result = absl::UnknownError("not run");
  JobEvaluator evaluator(this, job.get());
  if (!status.ok()) {
    result = status;
  } else if (spent) {
    agent::AgentResult r;
    r.stop = agent::StopReason::kWallBudget;
    r.stop_reason = "wall budget (spent before the orchestrator restarted)";
    result = r;
  } else {
    const double wall = job->run_spec.budget().wall_seconds();
    if (wall > 0) {
      job->cancel.SetDeadline(options_.clock->NowMonotonicMicros() +
                              static_cast<int64_t>((wall + options_.wall_grace_s) * 1e6));
    }
    // No executor can run it yet (all restarting, say): wait, bounded by the
    // job's budget, saying why in its events.
    absl::Status runnable = pool_->AwaitRunnable(job->run_spec, job->cancel, &evaluator);
    absl::StatusOr<v1::ProblemInfo> problem =
        runnable.ok() ? pool_->DescribeProblem(job->run_spec) : runnable;
    if (!problem.ok()) {
      result = Annotate(problem.status(), "describing the problem");
    } else {
      // The agent's clock starts now: what this attempt spent before (the
      // wait for an executor) shifts its events and shrinks its budget, so
      // elapsed times stay monotone and the wall budget holds.
      JobSink::Offsets offsets = job->offsets;
      int64_t spent_here_ms;
      {
        std::lock_guard lock(mu_);
        offsets.elapsed_ms = ElapsedMs(*job);
        spent_here_ms = offsets.elapsed_ms - job->offsets.elapsed_ms;
      }
      JobSink sink(job->id, std::string(BackendName(job->spec.backend())), offsets, log_,
                   &job->progress, metrics_);
      agent::AgentEnv env;
      env.job_id = job->id;
      env.spec = job->run_spec;
      if (wall > 0) {
        env.spec.mutable_budget()->set_wall_seconds(
            std::max(wall - static_cast<double>(spent_here_ms) / 1e3, 0.001));
      }
      env.problem = *problem;
      if (auto device = pool_->DeviceFor(job->run_spec); device.ok()) env.device = *device;
      env.evaluator = &evaluator;
      env.sink = &sink;
      env.cancel = &job->cancel;
      env.clock = options_.clock;
      env.llm_api_key = job->llm_api_key;
      auto agent = agent::MakeAgent(std::move(env), options_.agent);
      // An exception out of an agent ends this job, not the orchestrator
      // (this thread is detached: it would terminate the process and every
      // other job with it).
      try {
        result = agent.ok() ? (*agent)->Run() : agent.status();
      } catch (const std::exception& ex) {
        result = absl::InternalError(fmt::format("the agent failed: {}", ex.what()));
      }
      if (result.ok() && !result->best_candidate_sha256.empty() &&
          !job->cancel.ExplicitlyCancelled()) {
        // The job's result is one fresh measurement of the agent's choice,
        // not the best of its many noisy ones (final_measurement.h).
        FinalMeasurementEnv f;
        f.job_id = job->id;
        f.spec = job->run_spec;
        f.candidate_sha256 = result->best_candidate_sha256;
        f.store = store_;
        f.evaluator = &evaluator;
        f.sink = &sink;
        f.job_cancel = &job->cancel;
        f.clock = options_.clock;
        f.elapsed_ms = [&] {
          std::lock_guard lock(mu_);
          return ElapsedMs(*job) - offsets.elapsed_ms;
        };
        if (absl::Status s = MeasureFinal(f); !s.ok()) {
          result = Annotate(s, "recording the final measurement");
        }
      }
    }
  }

  v1::JobState final_state;
  std::string reason, error;
  {
    std::lock_guard lock(mu_);
    final_state = EndStateLocked(*job, result, &reason, &error);
  }
  spdlog::info("job {} {}: {}{}", job->id, ProtoStateName(final_state), reason,
               error.empty() || reason.find(error) != std::string::npos ? "" : " (" + error + ")");
  final_state = EndJob(*job, final_state, reason, error);
  log_->Forget(job->id);
  std::lock_guard lock(mu_);
  finished_[std::string(ProtoStateName(final_state))]++;
  active_.erase(job->id);
  --running_;
  DispatchLocked();
  idle_cv_.notify_all();
}

// ------------------------------------------------------------------ views

v1::Job JobManager::Snapshot(const Job& job) const {
  v1::Job out;
  out.set_id(job.id);
  *out.mutable_spec() = job.spec;
  out.set_state(job.state);
  out.set_created_wall_us(job.created_wall_us);
  out.set_started_wall_us(job.started_wall_us);
  out.set_finished_wall_us(job.finished_wall_us);
  out.set_elapsed_ms(ElapsedMs(job));
  ProgressSnapshot p = job.progress.Get();
  out.set_turns(p.turns);
  out.set_evaluations(p.evaluations);
  out.set_tokens(p.tokens);
  out.set_cost_usd(p.cost_usd);
  if (p.best_speedup) out.set_best_speedup(*p.best_speedup);
  out.set_best_evaluation_id(p.best_evaluation_id);
  out.set_best_candidate_sha256(p.best_candidate_sha256);
  out.set_best_roofline_fraction(p.best_roofline_fraction);
  out.set_last_status(p.last_status);
  out.set_other_settings_evaluations(p.other_settings_evaluations);
  if (p.other_settings_best_speedup) out.set_other_settings_best_speedup(*p.other_settings_best_speedup);
  if (p.final_speedup) out.set_final_speedup(*p.final_speedup);
  out.set_final_evaluation_id(p.final_evaluation_id);
  out.set_final_status(p.final_status);
  out.set_final_roofline_fraction(p.final_roofline_fraction);
  out.set_final_candidate_sha256(p.final_candidate_sha256);
  out.set_error(job.end_pending.empty() ? job.error : job.end_pending);
  out.set_stop_reason(job.stop_reason);
  if (job.cancel_requested && !IsTerminal(job.state)) {
    out.set_stop_reason(job.cancel_reason.empty() ? "cancelling"
                                                  : "cancelling: " + job.cancel_reason);
  }
  return out;
}

absl::StatusOr<v1::Job> JobManager::FromStore(const std::string& job_id) {
  // With its stop reason (the terminal state event's), as the CLI's --db reads.
  return convert::LoadJob(*store_, job_id, options_.clock->NowWallMicros());
}

absl::StatusOr<v1::Job> JobManager::Get(const std::string& job_id) {
  RETURN_IF_ERROR(Annotate(ValidateId(job_id, "job"), "job_id"));
  {
    std::lock_guard lock(mu_);
    auto it = active_.find(job_id);
    if (it != active_.end()) return Snapshot(*it->second);
  }
  return FromStore(job_id);
}

absl::StatusOr<v1::ListJobsResponse> JobManager::List(const v1::ListJobsRequest& request) {
  int32_t page = request.page_size() == 0 ? 100 : request.page_size();
  if (page < 0 || page > 1000) return InvalidField("page_size", "must be in 0..1000");
  storage::JobFilter f;
  f.problem = request.problem();
  f.model = request.model();
  f.label = request.label();
  if (request.state() != v1::JOB_STATE_UNSPECIFIED) f.state = FromProtoState(request.state());
  f.limit = page + 1;
  if (!request.page_token().empty()) {
    RETURN_IF_ERROR(Annotate(ValidateId(request.page_token(), "job"), "page_token"));
    f.after_id = request.page_token();
  }
  ASSIGN_OR_RETURN(std::vector<storage::JobRecord> records, store_->ListJobs(f));
  v1::ListJobsResponse out;
  for (size_t i = 0; i < records.size() && static_cast<int32_t>(i) < page; ++i) {
    ASSIGN_OR_RETURN(v1::Job job, Get(records[i].id));
    // Without the replay sources' text (names kept; GetJob has it): a page
    // of 1000 jobs of MiBs of sources was a 251 MB reply (red team round 27).
    for (v1::ReplaySource& src : *job.mutable_spec()->mutable_agent()->mutable_replay_sources())
      src.clear_source();
    *out.add_jobs() = std::move(job);
  }
  if (static_cast<int32_t>(records.size()) > page) {
    out.set_next_page_token(records[page - 1].id);
  }
  return out;
}

absl::StatusOr<v1::Job> JobManager::Cancel(const std::string& job_id, const std::string& reason) {
  RETURN_IF_ERROR(Annotate(ValidateId(job_id, "job"), "job_id"));
  std::shared_ptr<Job> queued;
  {
    std::unique_lock lock(mu_);
    auto it = active_.find(job_id);
    if (it == active_.end()) {
      lock.unlock();
      return FromStore(job_id);  // finished (or unknown): nothing to cancel
    }
    std::shared_ptr<Job> job = it->second;
    job->cancel_requested = true;
    job->cancel_reason = reason;
    auto q = std::find(queue_.begin(), queue_.end(), job);
    if (q != queue_.end()) {
      queue_.erase(q);
      queued = job;
    } else {
      job->cancel.Cancel(absl::CancelledError(reason.empty() ? "cancelled" : reason));
      state_cv_.notify_all();  // an end being retried becomes the cancel
      // Reply with the state after the cancel: jobs stop within ~100 ms of
      // their token firing; one that takes longer is reported "cancelling".
      state_cv_.wait_for(lock, std::chrono::seconds(5),
                         [&] { return IsTerminal(job->state) || shutting_down_; });
      return Snapshot(*job);
    }
  }
  // Never ran: it ends here, on this thread.
  absl::Status s = Transition(*queued, v1::JOB_STATE_CANCELLED,
                              reason.empty() ? "cancelled" : "cancelled: " + reason, "");
  log_->Forget(job_id);
  std::lock_guard lock(mu_);
  finished_["cancelled"]++;
  active_.erase(job_id);
  RETURN_IF_ERROR(s);
  return Snapshot(*queued);
}

std::map<std::string, int64_t> JobManager::CountByState() {
  std::lock_guard lock(mu_);
  std::map<std::string, int64_t> out = {{"queued", 0}, {"running", 0}};
  for (const auto& [id, job] : active_) out[std::string(ProtoStateName(job->state))]++;
  for (const auto& [state, n] : finished_) out[state] += n;
  return out;
}

// --------------------------------------------------------------- shutdown

void JobManager::Shutdown(const std::string& reason, double grace_s) {
  std::unique_lock lock(mu_);
  if (!shutting_down_) {
    shutting_down_ = true;
    accepting_ = false;
    shutdown_reason_ = reason;
    // Queued jobs stay queued in the database and run after the next start.
    for (const auto& job : queue_) active_.erase(job->id);
    queue_.clear();
    for (const auto& [id, job] : active_) {
      job->cancel.Cancel(absl::CancelledError(reason));
    }
    state_cv_.notify_all();  // ends being retried give up (recovered next start)
  }
  auto idle = [this] { return running_ == 0; };
  if (!idle_cv_.wait_for(lock, std::chrono::microseconds(static_cast<int64_t>(grace_s * 1e6)),
                         idle)) {
    spdlog::warn("shutdown: {} job(s) still stopping after {:.1f} s; waiting", running_, grace_s);
    idle_cv_.wait(lock, idle);
  }
}

// Recovery after a restart: job_recovery.cc.

}  // namespace pkforge::orchestrator
