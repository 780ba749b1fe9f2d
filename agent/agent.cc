#include "agent/agent.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "agent/job_context.h"
#include "common/status.h"
#include "fmt/format.h"

namespace pkforge::agent {
namespace {

absl::Status Invalid(std::string msg) { return absl::InvalidArgumentError(AsAbsl(msg)); }

bool NonNegative(double v) { return std::isfinite(v) && v >= 0; }

}  // namespace

std::string_view StopReasonText(StopReason reason) {
  switch (reason) {
    case StopReason::kWallBudget:
      return "wall budget";
    case StopReason::kMaxTurns:
      return "max turns";
    case StopReason::kMaxEvaluations:
      return "max evaluations";
    case StopReason::kTokenBudget:
      return "token budget";
    case StopReason::kCostBudget:
      return "cost budget";
    case StopReason::kTargetReached:
      return "target speedup reached";
    case StopReason::kCancelled:
      return "cancelled";
    case StopReason::kExhausted:
      return "nothing left to try";
  }
  return "unknown";
}

absl::Status ValidateJobSpec(const v1::JobSpec& spec) {
  if (spec.problem().empty()) return Invalid("problem is empty");
  if (spec.backend() != v1::BACKEND_HOST && spec.backend() != v1::BACKEND_CUDA) {
    return Invalid("backend: expected host or cuda");
  }
  if (spec.world_size() < 1) return Invalid("world_size must be >= 1");
  const v1::Budget& b = spec.budget();
  if (!NonNegative(b.wall_seconds()) || b.max_turns() < 0 || b.max_evaluations() < 0 ||
      b.max_tokens() < 0 || !NonNegative(b.max_cost_usd()) || !NonNegative(b.target_speedup())) {
    return Invalid("budget: limits must be finite and >= 0");
  }
  if (b.wall_seconds() == 0 && b.max_turns() == 0 && b.max_evaluations() == 0 &&
      b.max_tokens() == 0 && b.max_cost_usd() == 0) {
    return Invalid(
        "budget: set at least one of wall_seconds, max_turns, max_evaluations, max_tokens, "
        "max_cost_usd");
  }
  const v1::AgentConfig& a = spec.agent();
  const v1::Strategy& s = a.strategy();
  if (s.n() < 0 || s.population() < 0 || s.top_k() < 0) {
    return Invalid("agent.strategy: n, population and top_k must be >= 0");
  }
  // A turn's candidates are written and evaluated together: best_of_n = 2^31-1
  // allocated a turn that size and the orchestrator died of bad_alloc (API
  // fuzzing, session 16).
  if (s.n() > kMaxStrategyWidth || s.population() > kMaxStrategyWidth ||
      s.top_k() > kMaxStrategyWidth) {
    return Invalid(fmt::format("agent.strategy: n, population and top_k must be <= {}",
                               kMaxStrategyWidth));
  }
  switch (a.kind()) {
    case v1::AGENT_KIND_LLM:
      if (a.llm().provider() != v1::PROVIDER_OPENAI &&
          a.llm().provider() != v1::PROVIDER_ANTHROPIC) {
        return Invalid("agent.llm.provider: expected openai or anthropic");
      }
      if (a.llm().model().empty()) return Invalid("agent.llm.model is empty");
      if (!NonNegative(a.llm().temperature())) return Invalid("agent.llm.temperature must be >= 0");
      if (a.llm().max_tokens() < 0 || a.llm().context_tokens() < 0 ||
          !NonNegative(a.llm().request_timeout_s())) {
        return Invalid("agent.llm: max_tokens, context_tokens and request_timeout_s must be >= 0");
      }
      if (s.kind() != v1::STRATEGY_UNSPECIFIED && s.kind() != v1::STRATEGY_SEQUENTIAL &&
          s.kind() != v1::STRATEGY_BEST_OF_N && s.kind() != v1::STRATEGY_TREE) {
        return Invalid("agent.strategy.kind is unknown");
      }
      if (s.kind() == v1::STRATEGY_TREE && s.population() > 0 && s.top_k() > s.population()) {
        return Invalid("agent.strategy: top_k must not exceed population");
      }
      return absl::OkStatus();
    case v1::AGENT_KIND_SEARCH:
      if (!a.search_algorithm().empty() && a.search_algorithm() != "successive_halving") {
        return Invalid(fmt::format("agent.search_algorithm '{}': only successive_halving is built",
                                   a.search_algorithm()));
      }
      return absl::OkStatus();
    case v1::AGENT_KIND_REPLAY:
      if (a.replay_dir().empty() && a.replay_sources().empty())
        return Invalid("agent.replay_sources (or replay_dir) is empty");
      return absl::OkStatus();
    default:
      return Invalid("agent.kind: expected llm, search or replay");
  }
}

absl::StatusOr<std::unique_ptr<Agent>> MakeAgent(AgentEnv env, AgentOptions options) {
  if (env.evaluator == nullptr) return Invalid("agent env: evaluator is null");
  if (env.sink == nullptr) return Invalid("agent env: sink is null");
  if (env.clock == nullptr) return Invalid("agent env: clock is null");
  if (env.job_id.empty()) return Invalid("agent env: job_id is empty");
  // The wall deadline is set on the job token, a child of env.cancel, and is
  // measured on env.clock: both must be one timeline.
  if (env.cancel != nullptr && env.cancel->clock() != env.clock) {
    return Invalid("agent env: cancel token and env use different clocks");
  }
  RETURN_IF_ERROR(ValidateJobSpec(env.spec));
  switch (env.spec.agent().kind()) {
    case v1::AGENT_KIND_LLM:
      return internal::MakeLlmAgent(std::move(env), std::move(options));
    case v1::AGENT_KIND_SEARCH:
      return internal::MakeSearchAgent(std::move(env), std::move(options));
    case v1::AGENT_KIND_REPLAY:
      return internal::MakeReplayAgent(std::move(env), std::move(options));
    default:
      return Invalid("agent.kind: expected llm, search or replay");
  }
}

namespace internal {

void RunConcurrently(int n, const std::function<void(int)>& fn) {
  if (n <= 0) return;
  if (n == 1) {
    fn(0);
    return;
  }
  // At most kMaxConcurrentWorks threads, each taking the next index.
  std::atomic<int> next{0};
  const int threads_n = std::min(n, kMaxConcurrentWorks);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(threads_n));
  for (int t = 0; t < threads_n; ++t)
    threads.emplace_back([&] {
      for (int i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(i);
    });
  for (auto& t : threads) t.join();
}

}  // namespace internal
}  // namespace pkforge::agent
