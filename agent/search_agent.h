// The search agent: the principled non-LLM baseline (design section 8). It
// explores the parameterized expert kernels of agent/kernel_templates.h for
// the job's problem and backend, under the same budgets as the LLM agent, and
// records the same trajectory entries (one turn per rung, a candidate per
// configuration with origin "search:<params>", every evaluation).
//
// Exploration: successive halving.
// - The configurations are ordered: the template family's baseline first,
//   then the rest shuffled with JobSpec.seed (deterministic per seed).
// - The job's own timed iterations T are EvalSettings.timed_iters, or the
//   executor's default (AgentOptions::executor_default_timed_iters) when 0.
// - Rung 0 evaluates the first n0 configurations with T0 timed iterations:
//   T when the spec set it; else min(SearchOptions::min_timed_iters, T).
//   With max_evaluations E set, n0 = min(space, max(1, E * (eta-1) / eta)) so
//   the whole schedule (n0 + n0/eta + ...) fits in E; otherwise n0 = space.
//   With a wall budget, after rung 0's first batch the agent measures the
//   time per batch and narrows n0 so the whole schedule fits in 80% of the
//   time left (logged), so a large space still reaches its final rung.
// - Each next rung keeps the ceil(n/eta) fastest correct configurations of the
//   previous one and re-evaluates them with eta times the timed iterations,
//   capped at SearchOptions::max_timed_iters when the spec set T, at T when
//   it did not; so the final choice rests on the most precise measurements.
//   Failed configurations are dropped.
// - Evaluations at T are at the job's own settings (comparable: the job's
//   best-so-far, curve, plateau analysis); the others are recorded as at
//   other settings and kept apart. So a job at the default settings has its
//   rungs after rung 0 on its best-so-far axis, and the agent's choice
//   (AgentResult.best_*: the fastest of the evaluations with the most
//   iterations) is the job's best; a job that set T has rung 0 on that axis
//   and chooses from the later, more precise rungs. Each rung's turn note
//   says which settings it ran at.
//   At the default settings a rung of one configuration (the last) always
//   runs at T, also when the budget leaves room for only that one rung.
// - It ends when a rung of one configuration was evaluated, when no
//   configuration was correct (nothing to refine) or when a budget stops it.
// Evaluations within a rung run `AgentOptions::parallel_evaluations` (or
// Strategy.n) at a time.
//
// Threading: as for every Agent (agent.h).
#pragma once

#include <cstdint>
#include <vector>

namespace pkforge::agent {

struct HalvingRung {
  int32_t configs = 0;
  int32_t timed_iters = 0;
};

// The rung plan successive halving follows when every configuration of a
// rung succeeds (fewer survive when some fail). max_evaluations 0 = none.
std::vector<HalvingRung> PlanSuccessiveHalving(int32_t space_size, int32_t max_evaluations,
                                               int32_t eta, int32_t first_timed_iters,
                                               int32_t max_timed_iters);

}  // namespace pkforge::agent
