#include "orchestrator/job_sink.h"

#include <cmath>

#include "common/status.h"
#include "fmt/format.h"
#include "orchestrator/convert.h"

namespace pkforge::orchestrator {

JobSink::JobSink(std::string job_id, std::string backend, Offsets offsets, EventLog* log,
                 JobProgress* progress, Metrics* metrics)
    : job_id_(std::move(job_id)),
      backend_(std::move(backend)),
      offsets_(offsets),
      log_(log),
      progress_(progress),
      metrics_(metrics) {}

v1::Event JobSink::NewEvent(int64_t wall_us, int64_t elapsed_ms) const {
  v1::Event e;
  e.set_job_id(job_id_);
  e.set_wall_us(wall_us);
  e.set_elapsed_ms(elapsed_ms + offsets_.elapsed_ms);
  return e;
}

absl::Status JobSink::Append(v1::Event event, const storage::StepRows& rows) {
  const int64_t elapsed = event.elapsed_ms();
  ASSIGN_OR_RETURN(v1::Event committed, log_->Append(std::move(event), rows));
  (void)committed;
  progress_->Update([&](ProgressSnapshot& s) { s.last_elapsed_ms = elapsed; });
  return absl::OkStatus();
}

absl::Status JobSink::OnTurnStarted(const agent::TurnEntry& e) {
  storage::TurnRecord r;
  r.id = e.turn_id;
  r.job_id = job_id_;
  r.index = e.index + offsets_.turn_index;
  r.started_wall_us = e.wall_us;
  r.elapsed_ms = e.elapsed_ms + offsets_.elapsed_ms;
  r.note = e.note;
  v1::Event ev = NewEvent(e.wall_us, e.elapsed_ms);
  ev.mutable_turn_started()->set_turn_id(e.turn_id);
  ev.mutable_turn_started()->set_index(r.index);
  RETURN_IF_ERROR(Append(std::move(ev), {.turn = &r}));
  progress_->Update([](ProgressSnapshot& s) { ++s.turns; });
  return absl::OkStatus();
}

absl::Status JobSink::OnLlmCall(const agent::LlmCallEntry& e) {
  storage::LlmCallRecord r;
  r.id = e.call_id;
  r.job_id = job_id_;
  r.turn_id = e.turn_id;
  r.provider = e.provider;
  r.model = e.model;
  r.prompt = e.prompt;
  r.reply = e.reply;
  r.prompt_tokens = e.prompt_tokens;
  r.completion_tokens = e.completion_tokens;
  r.latency_ms = e.latency_ms;
  r.cost_usd = e.cost_usd;
  r.attempts = std::max(1, e.attempts);
  r.error = e.error;
  r.wall_us = e.wall_us;
  r.elapsed_ms = e.elapsed_ms + offsets_.elapsed_ms;
  v1::Event ev = NewEvent(e.wall_us, e.elapsed_ms);
  auto* p = ev.mutable_llm_call();
  p->set_call_id(e.call_id);
  p->set_model(e.model);
  p->set_prompt_tokens(e.prompt_tokens);
  p->set_completion_tokens(e.completion_tokens);
  p->set_latency_ms(e.latency_ms);
  p->set_cost_usd(e.cost_usd);
  p->set_attempts(r.attempts);
  p->set_error(e.error);
  RETURN_IF_ERROR(Append(std::move(ev), {.llm_call = &r}));
  const int64_t tokens = e.prompt_tokens + e.completion_tokens;
  progress_->Update([&](ProgressSnapshot& s) {
    s.tokens += tokens;
    s.cost_usd += e.cost_usd;
  });
  if (metrics_ != nullptr) metrics_->LlmCall(tokens);
  return absl::OkStatus();
}

absl::Status JobSink::OnCandidate(const agent::CandidateEntry& e) {
  storage::CandidateRecord r;
  r.sha256 = e.sha256;
  r.source = e.source;
  r.backend = e.backend.empty() ? backend_ : e.backend;
  r.first_seen_wall_us = e.wall_us;
  v1::Event ev = NewEvent(e.wall_us, e.elapsed_ms);
  ev.mutable_log()->set_level("info");
  ev.mutable_log()->set_text(fmt::format(
      "candidate {} origin={}{}{}", e.sha256, e.origin,
      e.parent_sha256.empty() ? "" : " parent=" + e.parent_sha256,
      e.llm_call_id.empty() ? "" : " llm_call=" + e.llm_call_id));
  return Append(std::move(ev), {.candidate = &r});
}

absl::Status JobSink::OnEvaluationStarted(const agent::EvaluationStartEntry& e) {
  v1::Event ev = NewEvent(e.wall_us, e.elapsed_ms);
  ev.mutable_evaluation_started()->set_evaluation_id(e.evaluation_id);
  ev.mutable_evaluation_started()->set_candidate_sha256(e.candidate_sha256);
  return Append(std::move(ev));
}

absl::Status JobSink::OnEvaluationFinished(const agent::EvaluationEntry& e) {
  v1::Event ev = NewEvent(e.wall_us, e.elapsed_ms);
  auto* p = ev.mutable_evaluation_finished();
  p->set_evaluation_id(e.evaluation_id);
  if (!e.error.ok()) {
    p->set_status(v1::EvaluationResult::STATUS_UNSPECIFIED);
    p->set_message(fmt::format("no result: {}", e.error.ToString()));
    // A final re-measurement without a result is still the job's result
    // (watchers say "re-measurement had no result"), not a search
    // evaluation without one.
    p->set_final_measurement(e.final_measurement);
    p->mutable_stages()->set_queue_ms(e.queue_ms);
    RETURN_IF_ERROR(Append(std::move(ev)));
    if (absl::IsInvalidArgument(e.error) || absl::IsFailedPrecondition(e.error)) {
      progress_->Update([&](ProgressSnapshot& s) {
        if (s.refused++ == 0) s.first_refusal = std::string(e.error.message());
      });
    }
    if (metrics_ != nullptr) metrics_->EvaluationFinished("NO_RESULT");
    return absl::OkStatus();
  }
  const v1::EvaluationResult& res = e.result;
  storage::EvaluationRecord r;
  r.id = e.evaluation_id;
  r.job_id = job_id_;
  r.turn_id = e.turn_id;
  r.candidate_sha256 = e.candidate_sha256;
  r.status = StatusName(res.status());
  r.correct = res.status() == v1::EvaluationResult::OK;
  if (res.has_speedup() && std::isfinite(res.speedup()) && res.speedup() > 0) {
    r.speedup = res.speedup();
  }
  if (res.candidate().samples() > 0) r.candidate_median_us = res.candidate().median_us();
  if (res.reference().samples() > 0) r.reference_median_us = res.reference().median_us();
  if (res.roofline().candidate_fraction() > 0 && std::isfinite(res.roofline().candidate_fraction())) {
    r.roofline_fraction = res.roofline().candidate_fraction();
  }
  ASSIGN_OR_RETURN(r.result_json, ToJson(res));
  r.executor = e.executor;
  r.queue_ms = std::max(0.0, e.queue_ms);
  r.compile_ms = std::max(0.0, e.compile_ms);
  r.run_ms = std::max(0.0, e.run_ms);
  r.wall_us = e.wall_us;
  r.elapsed_ms = e.elapsed_ms + offsets_.elapsed_ms;
  r.timed_iters = std::max(0, e.timed_iters);
  r.trials = std::max(0, e.trials);
  r.comparable = e.comparable;
  r.role = e.final_measurement ? storage::kRoleFinal : storage::kRoleSearch;
  p->set_final_measurement(e.final_measurement);
  p->set_other_settings(!e.comparable);
  p->set_timed_iters(r.timed_iters);
  p->set_status(res.status());
  if (r.speedup) p->set_speedup(*r.speedup);
  p->set_message(res.message());
  auto* st = p->mutable_stages();
  *st = res.stages();
  st->set_queue_ms(r.queue_ms);
  if (st->compile_ms() == 0) st->set_compile_ms(r.compile_ms);
  if (st->run_ms() == 0) st->set_run_ms(r.run_ms);
  RETURN_IF_ERROR(Append(std::move(ev), {.evaluation = &r}));
  if (e.final_measurement) {
    // The job's result, not one of its search's evaluations (not counted).
    progress_->Update([&](ProgressSnapshot& s) {
      s.final_speedup = r.speedup;
      s.final_evaluation_id = e.evaluation_id;
      s.final_status = res.status();
      s.final_roofline_fraction = r.roofline_fraction.value_or(0);
      s.final_candidate_sha256 = e.candidate_sha256;
    });
    if (metrics_ != nullptr) metrics_->EvaluationFinished(r.status);
    return absl::OkStatus();
  }
  last_evaluation_id_ = e.evaluation_id;
  last_roofline_fraction_ = r.roofline_fraction.value_or(0);
  progress_->Update([&](ProgressSnapshot& s) {
    ++s.evaluations;
    s.last_status = res.status();
    if (!e.comparable) {
      ++s.other_settings_evaluations;
      if (r.correct && r.speedup &&
          (!s.other_settings_best_speedup || *r.speedup > *s.other_settings_best_speedup)) {
        s.other_settings_best_speedup = r.speedup;
      }
    }
  });
  if (metrics_ != nullptr) metrics_->EvaluationFinished(r.status);
  return absl::OkStatus();
}

absl::Status JobSink::OnBestImproved(const agent::BestImprovedEntry& e) {
  // The agent decides "improved" against its own best, then records later:
  // two evaluations of one job finishing together may record in the other
  // order (1.028x, then the 0.808x that was decided first), and a resumed
  // attempt starts with no best at all. The job's best so far (progress_,
  // seeded from the store on resume) is the one the event promises to beat;
  // sink calls of a job are serialised, so checking here is exact.
  const std::optional<double> best = progress_->Get().best_speedup;
  if (best.has_value() && !(e.speedup > *best)) return absl::OkStatus();
  v1::Event ev = NewEvent(e.wall_us, e.elapsed_ms);
  auto* p = ev.mutable_best_improved();
  p->set_evaluation_id(e.evaluation_id);
  p->set_speedup(e.speedup);
  p->set_previous(best.value_or(0));
  RETURN_IF_ERROR(Append(std::move(ev)));
  progress_->Update([&](ProgressSnapshot& s) {
    if (!s.best_speedup || e.speedup > *s.best_speedup) {
      s.best_speedup = e.speedup;
      s.best_evaluation_id = e.evaluation_id;
      s.best_candidate_sha256 = e.candidate_sha256;
      s.best_roofline_fraction =
          e.evaluation_id == last_evaluation_id_ ? last_roofline_fraction_ : 0;
    }
  });
  return absl::OkStatus();
}

absl::Status JobSink::OnLog(const agent::LogEntry& e) {
  v1::Event ev = NewEvent(e.wall_us, e.elapsed_ms);
  ev.mutable_log()->set_level(e.level);
  ev.mutable_log()->set_text(e.text);
  return Append(std::move(ev));
}

}  // namespace pkforge::orchestrator
