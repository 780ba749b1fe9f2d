// JobManager's recovery after a restart: every job the store holds
// unfinished is completed from its recorded end, queued again, resumed as a
// new attempt, or ended as interrupted (contract in job_manager.h,
// Recover()). Split out of job_manager.cc, which keeps the life of running
// jobs.
#include <algorithm>
#include <optional>
#include <string>

#include "common/status.h"
#include "fmt/format.h"
#include "orchestrator/convert.h"
#include "orchestrator/job_manager.h"
#include "orchestrator/job_manager_job.h"
#include "spdlog/spdlog.h"

namespace pkforge::orchestrator {

absl::Status JobManager::Recover() {
  ASSIGN_OR_RETURN(std::vector<storage::JobRecord> unfinished, store_->ListUnfinishedJobs());
  // Jobs that were running go first: they were admitted before any queued one.
  std::stable_partition(unfinished.begin(), unfinished.end(), [](const storage::JobRecord& r) {
    return r.state == storage::JobState::kRunning;
  });
  for (const auto& r : unfinished) {
    if (absl::Status s = RecoverOne(r); !s.ok()) {
      spdlog::error("recovering job {}: {}", r.id, s.ToString());
    }
  }
  std::lock_guard lock(mu_);
  DispatchLocked();
  return absl::OkStatus();
}

absl::Status JobManager::RecoverOne(const storage::JobRecord& r) {
  v1::JobSpec spec;
  RETURN_IF_ERROR(FromJson(r.spec_json, &spec));
  ASSIGN_OR_RETURN(storage::JobStats stats, store_->GetJobStats(r.id));

  // Count attempts and find a terminal event that was committed just before
  // the crash (the row update after it was lost).
  int attempts = 0;
  std::optional<v1::Event> last_state;
  std::vector<std::string> open_evaluations;  // started, no end event (in start order)
  for (int64_t after = 0;;) {
    ASSIGN_OR_RETURN(std::vector<storage::EventRecord> batch, store_->ReadEvents(r.id, after, 5000));
    if (batch.empty()) break;
    for (const auto& rec : batch) {
      after = rec.seq;
      if (rec.type == "evaluation_started" || rec.type == "evaluation_finished" ||
          rec.type == "evaluation_aborted") {
        ASSIGN_OR_RETURN(v1::Event ev, EventFromRecord(rec));
        const std::string& id = rec.type == "evaluation_started"
                                    ? ev.evaluation_started().evaluation_id()
                                : rec.type == "evaluation_finished"
                                    ? ev.evaluation_finished().evaluation_id()
                                    : ev.evaluation_aborted().evaluation_id();
        if (rec.type == "evaluation_started") {
          open_evaluations.push_back(id);
        } else {
          open_evaluations.erase(
              std::remove(open_evaluations.begin(), open_evaluations.end(), id),
              open_evaluations.end());
        }
        continue;
      }
      if (rec.type != "state_changed") continue;
      ASSIGN_OR_RETURN(v1::Event ev, EventFromRecord(rec));
      if (ev.state_changed().state() == v1::JOB_STATE_RUNNING) ++attempts;
      last_state = ev;
    }
  }
  if (last_state && IsTerminal(last_state->state_changed().state()) &&
      last_state->seq() == stats.last_event_seq) {
    const auto& sc = last_state->state_changed();
    const bool with_error =
        sc.state() == v1::JOB_STATE_FAILED || sc.state() == v1::JOB_STATE_INTERRUPTED;
    spdlog::info("job {}: completing its recorded end ({})", r.id, ProtoStateName(sc.state()));
    return store_->UpdateJobState(r.id, FromProtoState(sc.state()), with_error ? sc.reason() : "");
  }

  // Time is charged from the durable start time (see the header): the
  // attempt that died ran until the crash, not until its last event.
  int64_t charged_ms = stats.last_event_elapsed_ms;
  if (r.state == storage::JobState::kRunning && r.started_wall_us > 0) {
    charged_ms = std::max<int64_t>(
        charged_ms, (options_.clock->NowWallMicros() - r.started_wall_us) / 1000);
  }
  // Evaluations the crash cut off end now, so every evaluation_started has
  // its end event. Before anything else of this attempt: they belong to the
  // one that died.
  for (const std::string& eval_id : open_evaluations) {
    v1::Event ev;
    ev.set_job_id(r.id);
    ev.set_elapsed_ms(charged_ms);
    ev.mutable_evaluation_aborted()->set_evaluation_id(eval_id);
    ev.mutable_evaluation_aborted()->set_reason(
        "the orchestrator stopped while the evaluation ran (restart); it has no result");
    RETURN_IF_ERROR(Annotate(log_->Append(std::move(ev)).status(), "closing " + eval_id));
  }
  if (!open_evaluations.empty()) {
    spdlog::info("job {}: {} evaluation(s) cut off by the restart recorded as aborted", r.id,
                 open_evaluations.size());
  }

  auto job = std::make_shared<Job>(r.id, spec, options_.clock);
  job->created_wall_us = r.created_wall_us;
  job->started_wall_us = r.started_wall_us;
  job->offsets.turn_index = stats.turns;
  job->offsets.elapsed_ms = charged_ms;
  job->progress.Update([&](ProgressSnapshot& p) {
    p.turns = stats.turns;
    p.evaluations = stats.evaluations;
    p.tokens = stats.tokens;
    p.cost_usd = stats.cost_usd;
    p.best_speedup = r.best_speedup;
    p.best_evaluation_id = r.best_evaluation_id;
    p.best_candidate_sha256 = stats.best_candidate_sha256;
    p.best_roofline_fraction = stats.best_roofline_fraction.value_or(0);
    p.last_elapsed_ms = stats.last_event_elapsed_ms;
    p.other_settings_evaluations = stats.other_evaluations;
    p.other_settings_best_speedup = stats.other_best_speedup;
  });

  if (r.state == storage::JobState::kQueued) {
    spdlog::info("job {}: queued again after restart", r.id);
    std::lock_guard lock(mu_);
    active_[r.id] = job;
    queue_.push_back(job);
    return absl::OkStatus();
  }

  const auto kind = spec.agent().kind();
  const bool resumable = kind == v1::AGENT_KIND_SEARCH || kind == v1::AGENT_KIND_REPLAY;
  if (!options_.resume_jobs || !resumable) {
    const std::string why = fmt::format(
        "the orchestrator stopped while the job ran ({}); {}", "restart",
        resumable ? "resuming is disabled (resume_jobs: false)"
                  : "llm jobs are not resumed (a new attempt would repeat paid calls)");
    spdlog::info("job {}: interrupted: {}", r.id, why);
    return Transition(*job, v1::JOB_STATE_INTERRUPTED, why, why);
  }

  // A new attempt from scratch with what is left of the budget.
  v1::Budget* b = job->run_spec.mutable_budget();
  std::string spent;
  if (b->wall_seconds() > 0) {
    const double left = b->wall_seconds() - static_cast<double>(charged_ms) / 1e3;
    if (left <= 0) spent = "wall budget";
    b->set_wall_seconds(std::max(left, 0.001));
  }
  if (b->max_turns() > 0) {
    const int left = b->max_turns() - stats.turns;
    if (left <= 0) spent = "max turns";
    b->set_max_turns(std::max(left, 1));
  }
  if (b->max_evaluations() > 0) {
    const int left = b->max_evaluations() - stats.evaluations;
    if (left <= 0) spent = "max evaluations";
    b->set_max_evaluations(std::max(left, 1));
  }
  if (b->max_tokens() > 0) {
    const int64_t left = b->max_tokens() - stats.tokens;
    if (left <= 0) spent = "token budget";
    b->set_max_tokens(std::max<int64_t>(left, 1));
  }
  if (b->max_cost_usd() > 0) {
    const double left = b->max_cost_usd() - stats.cost_usd;
    if (left <= 0) spent = "cost budget";
    b->set_max_cost_usd(std::max(left, 1e-9));
  }
  if (!spent.empty()) {
    return Transition(*job, v1::JOB_STATE_SUCCEEDED,
                      spent + " (spent before the orchestrator restarted)", "");
  }
  job->attempt = attempts + 1;
  spdlog::info("job {}: resuming as attempt {}", r.id, job->attempt);
  std::lock_guard lock(mu_);
  active_[r.id] = job;
  queue_.push_back(job);
  return absl::OkStatus();
}

}  // namespace pkforge::orchestrator
