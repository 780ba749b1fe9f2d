// Agents: the loops that propose candidates for one job, have them evaluated
// and record every step (design section 8). Three kinds, one interface:
//   llm     prompts a model (agent/llm_client.h) with the problem, hardware,
//           principles and feedback, parses its reply (agent/reply_parser.h),
//           evaluates, repeats. Strategies:
//             sequential  one call per turn, refining the current best;
//             best_of_n   n calls per turn from the same prompt, the n
//                         candidates evaluated concurrently;
//             tree        a population (kept to `population` best nodes);
//                         each turn expands the top_k nodes, one call each,
//                         children evaluated concurrently.
//   search  the non-LLM baseline: parameterized expert kernels explored by
//           successive halving (agent/search_agent.h).
//   replay  evaluates the files of a directory in sorted order.
//
// Budgets (JobSpec.budget) apply to every kind: wall seconds, turns,
// evaluations, tokens, cost and a target speedup. At least one of wall,
// turns, evaluations, tokens or cost must be set. Checks happen before each
// turn, LLM call and evaluation; waits are bounded by the wall deadline and
// the external cancel token, so a job stops within ~100 ms of its wall budget
// or of cancellation (in-flight calls and evaluations are aborted and
// recorded as cancelled). Tokens and cost are known only after a call, so a
// job may overshoot them by the calls of its last turn. A turn whose reply
// has no usable code still counts as a turn; its feedback goes into the next
// prompt. Evaluation slots are reserved before evaluating, so concurrent
// strategies never exceed max_evaluations.
//
// Run() returns OK with the stop reason whenever the job ended normally
// (budget spent, target reached, cancelled, nothing left to try). It returns
// an error when the job failed: invalid spec, a sink error (the trajectory
// could not be recorded), a permanent provider error (bad key, unknown
// model), or max_consecutive_failures LLM calls / evaluations in a row that
// failed for infrastructure reasons.
//
// Threading: an Agent runs on the thread that calls Run() (the orchestrator
// runs many agents at once on its own threads); best_of_n, tree and a
// parallel search start short-lived worker threads for the concurrent calls
// and evaluations of one turn and join them before the turn ends. Run() is
// called once. The env's evaluator, sink, llm client and cancel token must
// outlive Run(); the evaluator and LLM client are used concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "agent/cancel.h"
#include "agent/evaluator.h"
#include "agent/llm_client.h"
#include "agent/prompt.h"
#include "agent/trajectory_sink.h"
#include "common/clock.h"
#include "pkforge/v1/common.pb.h"
#include "pkforge/v1/orchestrator.pb.h"

namespace pkforge::agent {

struct SearchOptions {
  // Successive halving: each rung keeps the best 1/eta of its configurations
  // and re-times them with eta times the timed iterations, up to a cap.
  // EvalSettings.timed_iters set: rung 0 times at that count (the job's own)
  // and later rungs at more, capped at max_timed_iters (other settings).
  // EvalSettings.timed_iters 0: the job's own count is the executor's default
  // (AgentOptions::executor_default_timed_iters); rung 0 screens at
  // min_timed_iters (other settings when fewer) and the cap is the job's own
  // count, so the rungs that choose the winner run at the job's own settings.
  int32_t eta = 3;
  int32_t min_timed_iters = 10;  // rung 0 when EvalSettings.timed_iters is 0
  int32_t max_timed_iters = 1000;  // the cap when EvalSettings.timed_iters is set
};

// One config struct for everything tunable in the agent module (the
// orchestrator fills it from its own config).
struct AgentOptions {
  LlmClientOptions llm;
  int64_t default_context_tokens = 32000;  // when LlmConfig.context_tokens is 0
  int32_t default_max_tokens = 8192;       // when LlmConfig.max_tokens is 0
  int32_t default_best_of_n = 4;
  int32_t default_population = 8;
  int32_t default_top_k = 2;
  // Infrastructure failures (LLM calls that ran out of retries, evaluations
  // without a result) in a row before the job fails.
  int32_t max_consecutive_failures = 3;
  // The timed iterations an executor runs when a request leaves timed_iters
  // at 0 (kernels/harness/judge.h LaunchOptions::iters; a test checks they
  // agree). A job with EvalSettings.timed_iters 0 runs at this count: an
  // evaluation requested with it is at the job's own settings (comparable)
  // and is sent with 0, exactly as the job's final re-measurement is.
  int32_t executor_default_timed_iters = 30;
  RenderLimits render;
  SearchOptions search;
  // Search and replay: evaluations in flight at once (LLM strategies use n /
  // top_k). 0 = Strategy.n when set, else 1.
  int32_t parallel_evaluations = 0;
  // Replay jobs with a replay_dir read files only from inside this directory
  // (the operator's --replay-root); "" = none: a replay_dir is refused
  // (PERMISSION_DENIED) and only inline replay_sources run. Checked again
  // when the job runs (also a job resumed after a restart with another
  // root): the path is walked from the root one component at a time with
  // O_NOFOLLOW, so `..` and symbolic links cannot lead out of it.
  std::string replay_root;
  size_t replay_max_files = 10000;  // a replay directory with more entries is refused
};

struct AgentEnv {
  std::string job_id;
  v1::JobSpec spec;
  v1::ProblemInfo problem;              // for spec's configuration: tensors, statement, reference
  v1::DeviceInfo device;                // from DescribeDevice of the executor pool
  Evaluator* evaluator = nullptr;       // required
  TrajectorySink* sink = nullptr;       // required
  const CancelToken* cancel = nullptr;  // optional: CancelJob / shutdown; on `clock`
  const Clock* clock = SystemClock::Get();
  // Optional: an LLM client to use instead of one made from spec.agent.llm
  // (shared clients, tests).
  const LlmClient* llm = nullptr;
  // Optional: the API client's own provider key for this job (the
  // orchestrator accepts it only where its operator allowed client keys).
  // Kept out of `spec` so that nothing that records or echoes the spec can
  // leak it; used for this job's LLM calls only.
  std::string llm_api_key;
};

enum class StopReason {
  kWallBudget,
  kMaxTurns,
  kMaxEvaluations,
  kTokenBudget,
  kCostBudget,
  kTargetReached,
  kCancelled,
  kExhausted,  // search space or replay directory done
};
std::string_view StopReasonText(StopReason reason);  // "wall budget", ...

struct AgentResult {
  StopReason stop = StopReason::kExhausted;
  std::string stop_reason;  // StopReasonText(stop)
  int32_t turns = 0;
  int32_t evaluations = 0;  // with a result
  int32_t llm_calls = 0;
  int64_t tokens = 0;
  double cost_usd = 0;
  int64_t elapsed_ms = 0;
  // best_*: the agent's choice, the candidate the orchestrator re-measures
  // at the end (orchestrator/final_measurement.h): the fastest correct
  // evaluation among those timed with the most iterations (a request of 0
  // counts as executor_default_timed_iters). LLM and replay agents time
  // everything at the job's own settings, so it is simply the fastest, the
  // job's best-so-far. A search decides by its last rungs: for a job at the
  // default settings they run at the job's own settings, so its choice is
  // the job's best-so-far too; for a job that set timed_iters they run with
  // more iterations (other settings, not comparable), so the choice may
  // differ from the best-so-far. Empty when no evaluation was correct.
  std::optional<double> best_speedup;
  std::string best_evaluation_id;
  std::string best_candidate_sha256;
  double best_roofline_fraction = 0;
  v1::EvaluationResult::Status last_status = v1::EvaluationResult::STATUS_UNSPECIFIED;
};

class Agent {
 public:
  virtual ~Agent() = default;
  virtual absl::StatusOr<AgentResult> Run() = 0;
};

// The most candidates one turn may hold: strategy n (best_of_n), population
// and top_k (tree) above it are refused.
inline constexpr int kMaxStrategyWidth = 64;

// Checks the parts of a spec the agent relies on (problem, backend, world
// size, agent kind and its settings, at least one budget limit, a strategy
// no wider than kMaxStrategyWidth).
absl::Status ValidateJobSpec(const v1::JobSpec& spec);

// Makes the agent of spec.agent.kind. INVALID_ARGUMENT for a bad spec or env.
absl::StatusOr<std::unique_ptr<Agent>> MakeAgent(AgentEnv env, AgentOptions options = {});

}  // namespace pkforge::agent
