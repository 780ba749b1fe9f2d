#include "agent/job_context.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/ids.h"
#include "common/logging.h"
#include "common/sha256.h"
#include "common/status.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace pkforge::agent::internal {

JobContext::JobContext(const AgentEnv& env, const AgentOptions& options)
    : env_(env), options_(options) {
  token_ = env_.cancel != nullptr ? std::make_unique<CancelToken>(env_.cancel)
                                  : std::make_unique<CancelToken>(env_.clock);
  start_mono_us_ = env_.clock->NowMonotonicMicros();
  const double wall = env_.spec.budget().wall_seconds();
  if (wall > 0) token_->SetDeadline(start_mono_us_ + static_cast<int64_t>(wall * 1e6));
}

int32_t JobContext::job_timed_iters() const {
  const int32_t own = env_.spec.eval().timed_iters();
  return own > 0 ? own : std::max(1, options_.executor_default_timed_iters);
}

Stamp JobContext::Now() const {
  return {env_.clock->NowWallMicros(), (env_.clock->NowMonotonicMicros() - start_mono_us_) / 1000};
}

std::optional<StopReason> JobContext::CheckStop(bool starting_turn) {
  const v1::Budget& b = env_.spec.budget();
  std::lock_guard<std::mutex> lock(mu_);
  if (target_reached_) return StopReason::kTargetReached;
  if (token_->ExplicitlyCancelled()) return StopReason::kCancelled;
  if (token_->RemainingMicros() <= 0) return StopReason::kWallBudget;
  if (starting_turn && b.max_turns() > 0 && turns_ >= b.max_turns()) return StopReason::kMaxTurns;
  if (b.max_evaluations() > 0 && evaluations_ + reserved_ >= b.max_evaluations()) {
    return StopReason::kMaxEvaluations;
  }
  if (b.max_tokens() > 0 && tokens_ >= b.max_tokens()) return StopReason::kTokenBudget;
  if (b.max_cost_usd() > 0 && cost_usd_ >= b.max_cost_usd()) return StopReason::kCostBudget;
  return std::nullopt;
}

bool JobContext::TryReserveEvaluation() {
  const int32_t max = env_.spec.budget().max_evaluations();
  std::lock_guard<std::mutex> lock(mu_);
  if (max > 0 && evaluations_ + reserved_ >= max) return false;
  ++reserved_;
  return true;
}

void JobContext::ReleaseEvaluation() {
  std::lock_guard<std::mutex> lock(mu_);
  if (reserved_ > 0) --reserved_;
}

int32_t JobContext::RemainingEvaluations() const {
  const int32_t max = env_.spec.budget().max_evaluations();
  if (max <= 0) return INT32_MAX;
  std::lock_guard<std::mutex> lock(mu_);
  return std::max(0, max - evaluations_ - reserved_);
}

absl::Status JobContext::Record(const std::function<absl::Status()>& fn) {
  std::lock_guard<std::mutex> lock(sink_mu_);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!sink_error_.ok()) return sink_error_;
  }
  absl::Status s = fn();
  if (!s.ok()) {
    s = Annotate(s, "recording the trajectory");
    std::lock_guard<std::mutex> l(mu_);
    if (sink_error_.ok()) sink_error_ = s;
    // Nothing more can be recorded: stop every wait of the job.
    token_->Cancel(s);
  }
  return s;
}

absl::StatusOr<TurnInfo> JobContext::BeginTurn(std::string note) {
  TurnEntry e;
  e.job_id = env_.job_id;
  e.turn_id = NewId("turn");
  {
    std::lock_guard<std::mutex> lock(mu_);
    e.index = turns_++;
  }
  e.note = std::move(note);
  const Stamp t = Now();
  e.wall_us = t.wall_us;
  e.elapsed_ms = t.elapsed_ms;
  RETURN_IF_ERROR(Record([&] { return env_.sink->OnTurnStarted(e); }));
  return TurnInfo{e.turn_id, e.index};
}

absl::Status JobContext::Log(const std::string& turn_id, std::string level, std::string text) {
  LogEntry e;
  e.job_id = env_.job_id;
  e.turn_id = turn_id;
  e.level = std::move(level);
  e.text = RedactSecrets(text);
  const Stamp t = Now();
  e.wall_us = t.wall_us;
  e.elapsed_ms = t.elapsed_ms;
  return Record([&] { return env_.sink->OnLog(e); });
}

absl::StatusOr<LlmOutcome> JobContext::CallLlm(const LlmClient& client, const std::string& turn_id,
                                               const std::vector<ChatMessage>& messages,
                                               double temperature, int32_t max_tokens) {
  LlmOutcome out;
  out.call_id = NewId("llm");
  const Stamp started = Now();
  LlmRequest req;
  req.messages = messages;
  req.temperature = temperature;
  req.max_tokens = max_tokens;
  out.result = client.Complete(req, *token_);

  LlmCallEntry e;
  e.job_id = env_.job_id;
  e.call_id = out.call_id;
  e.turn_id = turn_id;
  e.provider = std::string(client.provider());
  e.model = client.model();
  e.prompt = RedactSecrets(MessagesToJson(messages));
  e.reply = out.result.text;  // already redacted by the client
  e.prompt_tokens = out.result.prompt_tokens;
  e.completion_tokens = out.result.completion_tokens;
  e.latency_ms = out.result.latency_ms;
  e.cost_usd = out.result.cost_usd;
  e.attempts = out.result.attempts;
  e.error = out.result.status.ok() ? "" : RedactSecrets(out.result.status.ToString());
  e.note = out.result.note;
  e.started_elapsed_ms = started.elapsed_ms;
  const Stamp t = Now();
  e.wall_us = t.wall_us;
  e.elapsed_ms = t.elapsed_ms;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++llm_calls_;
    tokens_ += e.prompt_tokens + e.completion_tokens;
    cost_usd_ += e.cost_usd;
  }
  if (!out.result.status.ok()) {
    spdlog::warn("job {}: LLM call {} failed: {}", env_.job_id, out.call_id, e.error);
  }
  RETURN_IF_ERROR(Record([&] { return env_.sink->OnLlmCall(e); }));
  return out;
}

absl::StatusOr<Evaluated> JobContext::Evaluate(const std::string& turn_id,
                                               const std::string& source, const std::string& origin,
                                               const std::string& parent_sha256,
                                               const std::string& llm_call_id,
                                               const EvalOverrides& overrides) {
  Evaluated out;
  out.sha256 = Sha256Hex(source);
  out.evaluation_id = NewId("eval");
  const v1::JobSpec& spec = env_.spec;

  bool first_time;
  {
    std::lock_guard<std::mutex> lock(mu_);
    first_time = seen_candidates_.insert(out.sha256).second;
  }
  if (first_time) {
    CandidateEntry c;
    c.job_id = env_.job_id;
    c.turn_id = turn_id;
    c.sha256 = out.sha256;
    c.source = source;
    c.backend = std::string(BackendName(spec.backend()));
    c.origin = origin;
    c.parent_sha256 = parent_sha256;
    c.llm_call_id = llm_call_id;
    const Stamp t = Now();
    c.wall_us = t.wall_us;
    c.elapsed_ms = t.elapsed_ms;
    absl::Status s = Record([&] { return env_.sink->OnCandidate(c); });
    if (!s.ok()) {
      ReleaseEvaluation();
      return s;
    }
  }

  v1::EvaluateRequest req;
  req.set_problem(spec.problem());
  req.set_backend(spec.backend());
  req.set_world_size(spec.world_size());
  req.set_dtype(spec.dtype());
  *req.mutable_size() = spec.size();
  req.set_source(source);
  req.set_trials(spec.eval().trials());
  req.set_warmup_iters(spec.eval().warmup_iters());
  // The iterations it is timed with, a default resolved (for the choice,
  // which prefers the most iterations); at the job's own count the request is
  // the job's own, so a job at the executor's default sends 0 as its final
  // re-measurement does.
  const int32_t timed_iters =
      overrides.timed_iters > 0 ? overrides.timed_iters : job_timed_iters();
  const bool comparable = timed_iters == job_timed_iters();
  req.set_timed_iters(comparable ? spec.eval().timed_iters() : timed_iters);
  req.set_timeout_s(spec.eval().timeout_s());
  req.set_profile(spec.eval().profile());
  req.set_sanitize(spec.eval().sanitize());
  // Hidden shapes and the size ladder (issue #17 item 5), as orchestrator/convert.cc's EvaluationOf.
  req.set_hidden_shapes(spec.eval().hidden_shapes());
  *req.mutable_size_ladder() = spec.eval().size_ladder();
  req.set_precise_timing(spec.eval().precise_timing());
  req.set_client_tag(fmt::format("{} {}", env_.job_id, out.evaluation_id));

  EvaluationStartEntry start;
  start.job_id = env_.job_id;
  start.turn_id = turn_id;
  start.evaluation_id = out.evaluation_id;
  start.candidate_sha256 = out.sha256;
  const Stamp started = Now();
  start.wall_us = started.wall_us;
  start.elapsed_ms = started.elapsed_ms;
  absl::Status s = Record([&] { return env_.sink->OnEvaluationStarted(start); });
  if (!s.ok()) {
    ReleaseEvaluation();
    return s;
  }

  auto outcome = env_.evaluator->Evaluate(req, ProgressCallback(), *token_);

  EvaluationEntry e;
  e.job_id = env_.job_id;
  e.turn_id = turn_id;
  e.evaluation_id = out.evaluation_id;
  e.candidate_sha256 = out.sha256;
  e.started_wall_us = started.wall_us;
  e.started_elapsed_ms = started.elapsed_ms;
  FillFromOutcome(outcome, *token_, e);
  const Stamp done = Now();
  e.wall_us = done.wall_us;
  e.elapsed_ms = done.elapsed_ms;
  e.timed_iters = req.timed_iters();
  e.trials = req.trials();
  e.comparable = comparable;

  std::optional<BestImprovedEntry> improved;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (reserved_ > 0) --reserved_;
    if (outcome.ok()) {
      ++evaluations_;
      last_status_ = e.result.status();
      const bool correct = e.result.status() == v1::EvaluationResult::OK &&
                           e.result.has_speedup() && std::isfinite(e.result.speedup()) &&
                           e.result.speedup() > 0;
      if (correct &&
          (!choice_ || timed_iters > choice_->timed_iters ||
           (timed_iters == choice_->timed_iters && e.result.speedup() > choice_->speedup))) {
        choice_ = Choice{timed_iters, e.result.speedup(), out.evaluation_id, out.sha256,
                         e.result.roofline().candidate_fraction()};
      }
      if (correct && comparable && (!best_speedup_ || e.result.speedup() > *best_speedup_)) {
        BestImprovedEntry b;
        b.job_id = env_.job_id;
        b.evaluation_id = out.evaluation_id;
        b.candidate_sha256 = out.sha256;
        b.speedup = e.result.speedup();
        b.previous = best_speedup_.value_or(0);
        b.wall_us = done.wall_us;
        b.elapsed_ms = done.elapsed_ms;
        improved = b;
        best_speedup_ = e.result.speedup();
        const double target = spec.budget().target_speedup();
        if (target > 0 && *best_speedup_ >= target) target_reached_ = true;
      }
    }
  }
  out.error = e.error;
  if (outcome.ok()) out.result = e.result;
  out.improved = improved.has_value();
  RETURN_IF_ERROR(Record([&] { return env_.sink->OnEvaluationFinished(e); }));
  if (improved) RETURN_IF_ERROR(Record([&] { return env_.sink->OnBestImproved(*improved); }));
  if (improved && CheckStop(false) == StopReason::kTargetReached) {
    // Siblings still proposing or evaluating in this turn stop now.
    token_->Cancel(absl::CancelledError("target speedup reached"));
  }
  return out;
}

absl::Status JobContext::Failure(Kind kind, const absl::Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  int32_t& n = consecutive_failures_[static_cast<int>(kind)];
  ++n;
  if (n >= std::max(1, options_.max_consecutive_failures)) {
    return absl::UnavailableError(AsAbsl(fmt::format(
        "{} infrastructure failures in a row ({}); last: {}", n,
        kind == Kind::kLlm ? "LLM calls" : "evaluations", RedactSecrets(why.ToString()))));
  }
  return absl::OkStatus();
}

void JobContext::Success(Kind kind) {
  std::lock_guard<std::mutex> lock(mu_);
  consecutive_failures_[static_cast<int>(kind)] = 0;
}

std::optional<double> JobContext::best_speedup() const {
  std::lock_guard<std::mutex> lock(mu_);
  return best_speedup_;
}

AgentResult JobContext::Finish(StopReason stop) const {
  AgentResult r;
  r.stop = stop;
  r.stop_reason = std::string(StopReasonText(stop));
  std::lock_guard<std::mutex> lock(mu_);
  r.turns = turns_;
  r.evaluations = evaluations_;
  r.llm_calls = llm_calls_;
  r.tokens = tokens_;
  r.cost_usd = cost_usd_;
  r.elapsed_ms = (env_.clock->NowMonotonicMicros() - start_mono_us_) / 1000;
  if (choice_) {
    r.best_speedup = choice_->speedup;
    r.best_evaluation_id = choice_->evaluation_id;
    r.best_candidate_sha256 = choice_->sha256;
    r.best_roofline_fraction = choice_->roofline_fraction;
  }
  r.last_status = last_status_;
  return r;
}

}  // namespace pkforge::agent::internal
