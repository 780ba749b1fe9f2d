// JobContext (internal to the agent module): what every agent kind shares --
// budgets, the job's cancel token, time stamps, recording to the sink, LLM
// calls with accounting, and evaluations with best-so-far tracking.
//
// Contract
// - token() is cancelled by the external cancel token, by reaching the target
//   speedup, and expires at the wall budget; every wait of the job uses it.
// - Evaluation slots: TryReserveEvaluation() before proposing/evaluating,
//   ReleaseEvaluation() when no result came of it; Evaluate() consumes the
//   slot when a result arrives. So concurrent workers never exceed
//   max_evaluations.
// - Sink errors are sticky: the first one is kept, later recording calls
//   return it, and the agent returns it from Run().
//
// Threading: all methods are safe from the job's worker threads. Sink calls
// are serialised under one mutex, so the sink sees one call at a time per job.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "agent/agent.h"

namespace pkforge::agent::internal {

struct Stamp {
  int64_t wall_us = 0;
  int64_t elapsed_ms = 0;
};

struct LlmOutcome {
  LlmResult result;
  std::string call_id;
};

struct TurnInfo {
  std::string id;
  int32_t index = 0;  // 0-based
};

struct Evaluated {
  std::string evaluation_id;
  std::string sha256;
  absl::Status error;  // non-OK: no result (cancelled or infrastructure)
  v1::EvaluationResult result;
  bool improved = false;
};

// Per-evaluation overrides of JobSpec.eval (search rungs time with other
// iteration counts). An evaluation with an override that differs from the
// job's own count (JobContext::job_timed_iters()) is recorded as not
// comparable: it never makes the job's reported best (best_improved events,
// the target speedup), which stays on one axis. An override equal to the
// job's own count is the job's own request (sent as JobSpec.eval.timed_iters,
// so 0 stays 0: the executor's default) and is comparable.
struct EvalOverrides {
  int32_t timed_iters = 0;  // 0: JobSpec.eval.timed_iters
};

class JobContext {
 public:
  JobContext(const AgentEnv& env, const AgentOptions& options);
  JobContext(const JobContext&) = delete;
  JobContext& operator=(const JobContext&) = delete;

  const AgentEnv& env() const { return env_; }
  const AgentOptions& options() const { return options_; }
  const v1::JobSpec& spec() const { return env_.spec; }
  const CancelToken& token() const { return *token_; }
  // The job's own timed iterations: JobSpec.eval.timed_iters, or the
  // executor's default (AgentOptions::executor_default_timed_iters) when 0.
  int32_t job_timed_iters() const;

  Stamp Now() const;

  // Budget checks. `starting_turn` also checks max_turns.
  std::optional<StopReason> CheckStop(bool starting_turn);
  bool TryReserveEvaluation();
  void ReleaseEvaluation();
  int32_t RemainingEvaluations() const;  // INT32_MAX when unlimited

  // Records a turn and counts it.
  absl::StatusOr<TurnInfo> BeginTurn(std::string note);
  absl::Status Log(const std::string& turn_id, std::string level, std::string text);

  // Calls the model and records the call (also failed ones). Non-OK only for
  // sink errors.
  absl::StatusOr<LlmOutcome> CallLlm(const LlmClient& client, const std::string& turn_id,
                                     const std::vector<ChatMessage>& messages, double temperature,
                                     int32_t max_tokens);

  // Records the candidate (once per sha256 per job), evaluates it with the
  // job's settings and records start, finish and a best improvement. Needs a
  // reserved slot (consumed on a result, released otherwise). Non-OK only for
  // sink errors.
  absl::StatusOr<Evaluated> Evaluate(const std::string& turn_id, const std::string& source,
                                     const std::string& origin, const std::string& parent_sha256,
                                     const std::string& llm_call_id,
                                     const EvalOverrides& overrides = {});

  // Infrastructure failure accounting, per kind (a working LLM must not hide
  // a dead executor pool, nor the reverse): Failure() returns UNAVAILABLE
  // once max_consecutive_failures of that kind happened in a row; Success()
  // resets that kind's count.
  enum class Kind { kLlm = 0, kEvaluation = 1 };
  absl::Status Failure(Kind kind, const absl::Status& why);
  void Success(Kind kind);

  // The best comparable speedup so far (the job's reported best).
  std::optional<double> best_speedup() const;
  // AgentResult.best_* is the agent's choice, the candidate the orchestrator
  // re-measures at the end: the fastest correct evaluation among those timed
  // with the most iterations, a request of 0 counting as the executor's
  // default (so a search's final rungs decide, not a noisy early rung; with
  // one setting, simply the fastest).
  AgentResult Finish(StopReason stop) const;

 private:
  absl::Status Record(const std::function<absl::Status()>& fn);  // serialised, sticky errors

  AgentEnv env_;
  AgentOptions options_;
  std::unique_ptr<CancelToken> token_;
  int64_t start_mono_us_ = 0;

  mutable std::mutex mu_;  // guards everything below
  std::mutex sink_mu_;     // serialises sink calls (held while calling)
  absl::Status sink_error_;
  int32_t turns_ = 0;
  int32_t evaluations_ = 0;
  int32_t reserved_ = 0;  // in flight
  int32_t llm_calls_ = 0;
  int64_t tokens_ = 0;
  double cost_usd_ = 0;
  bool target_reached_ = false;
  int32_t consecutive_failures_[2] = {0, 0};
  std::set<std::string> seen_candidates_;
  std::optional<double> best_speedup_;  // comparable evaluations only
  // The agent's choice (see Finish).
  struct Choice {
    int32_t timed_iters = 0;
    double speedup = 0;
    std::string evaluation_id, sha256;
    double roofline_fraction = 0;
  };
  std::optional<Choice> choice_;
  v1::EvaluationResult::Status last_status_ = v1::EvaluationResult::STATUS_UNSPECIFIED;
};

}  // namespace pkforge::agent::internal

namespace pkforge::agent::internal {

// Factories of the three agent kinds (agent.cc dispatches on the spec's kind;
// the spec and env are validated before these are called).
absl::StatusOr<std::unique_ptr<Agent>> MakeLlmAgent(AgentEnv env, AgentOptions options);
absl::StatusOr<std::unique_ptr<Agent>> MakeSearchAgent(AgentEnv env, AgentOptions options);
absl::StatusOr<std::unique_ptr<Agent>> MakeReplayAgent(AgentEnv env, AgentOptions options);

// Runs fn(i) for i in [0, n): inline when n == 1, else on up to
// kMaxConcurrentWorks threads (each takes the next i), joined before
// returning.
inline constexpr int kMaxConcurrentWorks = 16;
void RunConcurrently(int n, const std::function<void(int)>& fn);

}  // namespace pkforge::agent::internal
