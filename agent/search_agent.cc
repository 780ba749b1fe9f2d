#include "agent/search_agent.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "agent/job_context.h"
#include "agent/kernel_templates.h"
#include "common/status.h"
#include "fmt/format.h"

namespace pkforge::agent {
namespace {

int32_t PlanTotal(const std::vector<HalvingRung>& plan) {
  int32_t total = 0;
  for (const auto& r : plan) total += r.configs;
  return total;
}

std::vector<HalvingRung> PlanFor(int32_t n0, int32_t eta, int32_t first_timed, int32_t max_timed) {
  std::vector<HalvingRung> plan;
  int64_t timed = first_timed;
  for (int32_t n = n0; n >= 1;) {
    plan.push_back({n, static_cast<int32_t>(std::min<int64_t>(timed, max_timed))});
    if (n == 1) break;
    n = (n + eta - 1) / eta;
    timed *= eta;
  }
  return plan;
}

}  // namespace

std::vector<HalvingRung> PlanSuccessiveHalving(int32_t space_size, int32_t max_evaluations,
                                               int32_t eta, int32_t first_timed_iters,
                                               int32_t max_timed_iters) {
  eta = std::max(2, eta);
  if (space_size <= 0) return {};
  int32_t n0 = space_size;
  if (max_evaluations > 0) {
    n0 = std::min(n0, max_evaluations);
    while (n0 > 1 &&
           PlanTotal(PlanFor(n0, eta, first_timed_iters, max_timed_iters)) > max_evaluations) {
      --n0;
    }
  }
  return PlanFor(n0, eta, first_timed_iters, max_timed_iters);
}

namespace internal {
namespace {

class SearchAgent final : public Agent {
 public:
  SearchAgent(AgentEnv env, AgentOptions options, std::vector<KernelParams> space)
      : ctx_(env, options), space_(std::move(space)) {}

  absl::StatusOr<AgentResult> Run() override {
    const v1::JobSpec& spec = ctx_.spec();
    const SearchOptions& so = ctx_.options().search;
    const int32_t eta = std::max(2, so.eta);
    // The job's own count: the spec's, or the executor's default. A job that
    // set one starts at it and re-times with more (other settings); a job at
    // the default screens rung 0 with fewer and times every later rung at
    // its own settings, so the rungs that choose the winner are on the job's
    // best-so-far axis and the choice is the job's best (issue #18 item 5).
    const int32_t own_timed = ctx_.job_timed_iters();
    const bool default_timed = spec.eval().timed_iters() <= 0;
    const int32_t first_timed =
        default_timed ? std::clamp(so.min_timed_iters, 1, own_timed) : own_timed;
    const int32_t max_timed = default_timed ? own_timed : std::max(own_timed, so.max_timed_iters);
    const int parallel =
        std::max(1, ctx_.options().parallel_evaluations > 0 ? ctx_.options().parallel_evaluations
                                                            : spec.agent().strategy().n());

    // Baseline first, then a seeded shuffle of the rest.
    std::vector<int> order(space_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::mt19937_64 rng(spec.seed());
    std::shuffle(order.begin() + 1, order.end(), rng);

    const std::vector<HalvingRung> plan =
        PlanSuccessiveHalving(static_cast<int32_t>(space_.size()), spec.budget().max_evaluations(),
                              eta, first_timed, max_timed);
    std::vector<int> rung_configs(order.begin(), order.begin() + plan.front().configs);
    int64_t timed = first_timed;
    const double wall_s = spec.budget().wall_seconds();
    bool sized_by_wall = !(wall_s > 0);  // nothing to adapt to without a wall budget
    for (int rung = 0; !rung_configs.empty(); ++rung) {
      if (auto stop = ctx_.CheckStop(/*starting_turn=*/true)) return ctx_.Finish(*stop);
      // A rung of one configuration is the last: at the default settings it
      // runs at the job's own (also when the budget allows only one rung).
      const int32_t iters = default_timed && rung_configs.size() == 1
                                ? own_timed
                                : static_cast<int32_t>(std::min<int64_t>(timed, max_timed));
      const std::string settings =
          iters != own_timed ? "other settings than the job's, kept off its best-so-far axis"
          : default_timed   ? "the job's own settings: the executor's default"
                            : "the job's own settings";
      ASSIGN_OR_RETURN(TurnInfo turn,
                       ctx_.BeginTurn(fmt::format("successive halving rung {}: {} configurations, "
                                                  "{} timed iterations ({})",
                                                  rung, rung_configs.size(), iters, settings)));
      std::vector<std::optional<double>> speedups(rung_configs.size());
      const int64_t rung_start_ms = ctx_.Now().elapsed_ms;
      for (size_t next = 0; next < rung_configs.size();) {
        if (auto stop = ctx_.CheckStop(/*starting_turn=*/false)) return ctx_.Finish(*stop);
        const int k = static_cast<int>(std::min<size_t>(parallel, rung_configs.size() - next));
        std::vector<absl::Status> fatal(k);
        RunConcurrently(k, [&](int i) {
          fatal[i] = EvaluateConfig(turn.id, rung_configs[next + i], iters, &speedups[next + i]);
        });
        for (const auto& s : fatal) RETURN_IF_ERROR(s);
        next += k;
        if (!sized_by_wall) {
          sized_by_wall = true;
          ASSIGN_OR_RETURN(size_t n0,
                           FitFirstRungToWall(turn.id, rung_start_ms, next, wall_s, parallel, eta,
                                              first_timed, max_timed, rung_configs.size()));
          rung_configs.resize(n0);
          speedups.resize(n0);
        }
      }
      if (rung_configs.size() == 1) break;  // the winner has its precise measurement
      std::vector<int> ranked;
      for (size_t i = 0; i < rung_configs.size(); ++i) {
        if (speedups[i]) ranked.push_back(static_cast<int>(i));
      }
      if (ranked.empty()) {
        RETURN_IF_ERROR(ctx_.Log(turn.id, "warn", "no configuration of this rung was correct"));
        break;
      }
      std::stable_sort(ranked.begin(), ranked.end(),
                       [&](int a, int b) { return *speedups[a] > *speedups[b]; });
      const size_t keep = std::min(ranked.size(), (rung_configs.size() + eta - 1) / eta);
      std::vector<int> survivors;
      for (size_t i = 0; i < keep; ++i) survivors.push_back(rung_configs[ranked[i]]);
      rung_configs = std::move(survivors);
      timed *= eta;
    }
    return ctx_.Finish(StopReason::kExhausted);
  }

 private:
  // With a wall budget, after the first batch of rung 0: how many of rung 0's
  // `n0` configurations to keep so that the whole halving schedule fits in
  // the time left at the measured time per batch (80% of it, since later
  // rungs time more iterations). Without this a large space spends the whole
  // budget on rung 0 and never refines its measurements.
  absl::StatusOr<size_t> FitFirstRungToWall(const std::string& turn_id, int64_t start_ms,
                                            size_t done, double wall_s, int parallel, int32_t eta,
                                            int32_t first_timed, int32_t max_timed, size_t n0) {
    if (done >= n0) return n0;
    const int64_t now_ms = ctx_.Now().elapsed_ms;
    const double batch_ms = static_cast<double>(std::max<int64_t>(1, now_ms - start_ms));
    const double left_ms = wall_s * 1000.0 - static_cast<double>(now_ms);
    const double batches = std::max(0.0, 0.8 * left_ms / batch_ms);
    int64_t affordable = static_cast<int64_t>(done) + static_cast<int64_t>(batches) * parallel;
    const int32_t max_evals = ctx_.spec().budget().max_evaluations();
    if (max_evals > 0) affordable = std::min<int64_t>(affordable, max_evals);
    affordable = std::clamp<int64_t>(affordable, 1, INT32_MAX);
    const std::vector<HalvingRung> plan =
        PlanSuccessiveHalving(static_cast<int32_t>(space_.size()), static_cast<int32_t>(affordable),
                              eta, first_timed, max_timed);
    const size_t fitted = std::max<size_t>(done, static_cast<size_t>(plan.front().configs));
    if (fitted >= n0) return n0;
    RETURN_IF_ERROR(ctx_.Log(
        turn_id, "info",
        fmt::format("wall budget: {:.0f} ms per batch of {}, {:.1f} s left: rung 0 narrowed from "
                    "{} to {} configurations so the halving can finish",
                    batch_ms, parallel, left_ms / 1000.0, n0, fitted)));
    return fitted;
  }

  absl::Status EvaluateConfig(const std::string& turn_id, int config, int32_t timed_iters,
                              std::optional<double>* speedup) {
    if (!ctx_.TryReserveEvaluation()) return absl::OkStatus();
    const KernelParams& p = space_[config];
    auto source = GenerateKernel(ctx_.spec().problem(), ctx_.spec().backend(), p);
    if (!source.ok()) {
      ctx_.ReleaseEvaluation();
      return Annotate(source.status(), "generating a search kernel");
    }
    ASSIGN_OR_RETURN(Evaluated ev,
                     ctx_.Evaluate(turn_id, *source, "search:" + p.Describe(ctx_.spec().backend()),
                                   "", "", EvalOverrides{timed_iters}));
    if (!ev.error.ok()) {
      if (ctx_.token().IsCancelled()) return absl::OkStatus();
      RETURN_IF_ERROR(ctx_.Failure(JobContext::Kind::kEvaluation, ev.error));
      return ctx_.Log(turn_id, "warn", "evaluation without result: " + ev.error.ToString());
    }
    ctx_.Success(JobContext::Kind::kEvaluation);
    if (ev.result.status() == v1::EvaluationResult::OK && ev.result.has_speedup() &&
        std::isfinite(ev.result.speedup())) {
      *speedup = ev.result.speedup();
    }
    return absl::OkStatus();
  }

  JobContext ctx_;
  std::vector<KernelParams> space_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Agent>> MakeSearchAgent(AgentEnv env, AgentOptions options) {
  std::vector<KernelParams> space = SearchSpace(env.spec.problem(), env.spec.backend());
  if (space.empty()) {
    return absl::UnimplementedError(
        AsAbsl(fmt::format("the search agent has no kernel templates for problem {} on backend {}",
                           env.spec.problem(), BackendName(env.spec.backend()))));
  }
  return std::unique_ptr<Agent>(
      new SearchAgent(std::move(env), std::move(options), std::move(space)));
}

}  // namespace internal
}  // namespace pkforge::agent
