// Plateau analysis: how fast a kernel does a job find, and when does it stop
// improving? (design section 9.)
//
// Everything here is a pure computation on plain structs: no SQLite, no I/O.
// storage/plateau_loader.h builds the inputs from a TrajectoryStore and
// storage/plateau_export.h writes the outputs as CSV, JSON and SVG, so the
// orchestrator (AnalyzePlateau), the CLI and offline tools share one set of
// definitions.
//
// Contract
// - Input is one JobTrajectory per job: its evaluations as (time, correct,
//   speedup) points on two clocks, and the job's run length. Points may come in
//   any order; each analysis sorts them (stably) by the chosen clock.
// - Bad input is rejected with INVALID_ARGUMENT naming the job and the index of
//   the offending point in the caller's (unsorted) vector, never silently fixed:
//   a plateau number computed from garbage would look just as plausible as a
//   real one. See ValidateTrajectory for the rules.
// - Times are seconds. Speedup is reference time / candidate time (> 1 is
//   faster than the reference); it is only looked at on correct points.
//
// Definitions (t is a time on the chosen axis, "end" is the run's end on it)
// - best(t): the highest speedup among correct points with time <= t. It is
//   undefined (std::nullopt) before the first correct point. It is a step
//   function; BestSoFarCurve stores only the steps, i.e. the times at which
//   best strictly increases. Equal speedups do not make a new step, and
//   several points at the same instant make one step (the best of them).
//     points (t, correct, speedup): (5,no,-) (10,yes,1.2) (20,yes,1.2)
//                                   (30,yes,1.0) (40,yes,1.8) (40,yes,1.5)
//     steps: (10, 1.2) (40, 1.8)
// - Time to first correct: the first step's time; none if never correct.
// - Time to fraction f (0 < f <= 1): the earliest t with
//   best(t) >= f * best(end); none if never correct. With the steps above,
//   f = 0.5 -> 10 (1.2 >= 0.9), f = 0.9 -> 40 (1.2 < 1.62).
// - Plateau onset, epsilon e >= 0 (default 0.01 = 1%), "improves by less than
//   e" meaning new_best < old_best * (1 + e) or no improvement at all:
//   * Without a window: the earliest step time t with
//       best(end) < best(t) * (1 + e)   (or best(end) == best(t))
//     provided the run went on for at least the minimum tail after t:
//       end - t >= min_tail_s   (default: 10% of end).
//     The tail rule is what makes a run that keeps improving up to its end
//     report NO plateau: the last step always satisfies the first condition,
//     but it has no evidence after it. Because best(end)/best(t) only shrinks
//     as t grows while the tail only shrinks too, the onset is the first step
//     meeting the epsilon rule if that step has enough tail, else none.
//       steps (10,1.0) (20,1.5) (30,1.505), end 100, e 0.01:
//         t=10: 1.505 >= 1.01 no; t=20: 1.505 < 1.515 yes, tail 80 >= 10
//         -> onset 20.
//       steps (10,1.0) (50,1.5) (95,2.0), end 100: only t=95 meets the
//         epsilon rule and its tail 5 < 10 -> no plateau.
//   * With a window W > 0: the earliest step time t with t + W <= end and
//       best(t + W) < best(t) * (1 + e)   (or equal),
//     i.e. the first time improvement stalled for W seconds, even if the run
//     improved again later (min tail is not used: the window is the evidence).
//       steps (10,1.0) (20,1.5) (100,3.0), end 200, W 50:
//         t=10: best(60)=1.5 no; t=20: best(70)=1.5 yes -> onset 20.
//       Same steps without a window: only t=100 qualifies (tail 100) -> 100.
//   * No step, no onset (never-correct jobs have none). Only step times need
//     checking: any other time that qualifies is preceded by a step that
//     qualifies too, since best is constant in between.
// - Active time: elapsed time minus time the job's evaluations spent waiting
//   in executor queues (see plateau_loader.h for how it is derived). The
//   run's end on the active axis is duration_s minus the largest queueing
//   (elapsed_s - active_s) of any point, i.e. the total when queueing is
//   cumulative (time after the last point counts as active: nothing was
//   measured there), but never before any point's active_s.
// - fast_p(t), for p >= 0: the share of the jobs of a set whose best(min(t,
//   end)) > p. Since correct speedups are > 0, p = 0 is "correct at all". A job
//   that ended before t keeps its final state (its budget ran out; it is not
//   dropped, so the curve is monotone in t and its denominator is fixed);
//   `jobs_running` at each point tells how many were still running.
// - Budget truncation ("what would a budget of b have given"): each job's
//   best(min(b, end)), i.e. the longer runs truncated at b. Summaries count
//   all jobs and give mean / median / p10 / p90 / geometric mean of the best
//   speedup among the jobs correct by b.
// - Group curves: for a group of jobs, at each time t the median and the 10th
//   and 90th percentiles across jobs of best(min(t, end)), where a job without
//   a correct candidate yet counts as speedup 0. Counting it as 0 rather than
//   leaving it out keeps failures visible (a model that finds something in 1
//   job out of 10 shows a median of 0, not the speedup of its lucky job) and
//   keeps the set fixed over time; `jobs_correct` at each point says how many
//   are non-zero. The curve is evaluated at every time where any member's
//   best changes, at 0, at each member's end (up to the group's end, its
//   longest run) and at the report's time grid points within that range;
//   between consecutive points it is constant, so drawn as steps it is exact.
// - Quantiles (medians, p10/p90, bands) interpolate linearly between order
//   statistics (numpy's default, "type 7"): the median of {1, 2} is 1.5.
//
// Thread safety: all functions are pure and safe to call concurrently; the
// result structs are plain values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pkforge::storage {

// One evaluation of a job.
struct EvalPoint {
  double elapsed_s = 0;  // since job start, wall clock, when the result arrived
  double active_s = 0;   // elapsed_s minus executor queueing; <= elapsed_s
  bool correct = false;
  double speedup = 0;  // reference / candidate; only meaningful when correct
  // Ran at the job's own evaluation settings. A point that did not (a
  // successive-halving rung timed with fewer iterations) counts as an
  // evaluation but never makes a step: its speedup is not on the same axis.
  // Its correct speedups are reported apart (BestSoFarCurve::other_*).
  bool comparable = true;
  // The evaluation's multi-size score (EvaluationResult.multi_size_score: the
  // geometric mean of its speedups over a size ladder), when it has one.
  std::optional<double> multi_size_score;
};

struct JobTrajectory {
  std::string job_id;
  std::string problem, model, strategy, agent_kind, label;  // for grouping
  // The job's run length on the elapsed clock: end - start for a finished job,
  // so far for a running one. Must be >= every point's elapsed_s.
  double duration_s = 0;
  std::vector<EvalPoint> points;  // any order
};

enum class TimeAxis { kElapsed, kActive };
std::string_view TimeAxisName(TimeAxis axis);  // "elapsed" | "active"
absl::StatusOr<TimeAxis> ParseTimeAxis(std::string_view name);

// OK, or INVALID_ARGUMENT naming the job and the point's index in `points`:
// a negative, NaN or infinite time or duration; active_s > elapsed_s; a
// duration before a point's elapsed_s; a correct point whose speedup is NaN,
// infinite or <= 0. Incorrect points' speedups are ignored.
absl::Status ValidateTrajectory(const JobTrajectory& job);

struct Step {
  double t = 0;
  double best = 0;
  friend bool operator==(const Step&, const Step&) = default;
};

// best(t) of one job on one axis, as the list of its steps.
struct BestSoFarCurve {
  std::vector<Step> steps;  // t strictly increasing, best strictly increasing
  double end_s = 0;         // the run's end on this axis; >= every step's t
  int evaluations = 0;
  int correct_evaluations = 0;  // comparable ones (the ones on this curve)
  // Points at other settings (EvalPoint::comparable false), shown apart: how
  // many, and the best correct speedup among them.
  int other_evaluations = 0;
  std::optional<double> other_best;

  // best(t); nullopt before the first correct point.
  std::optional<double> At(double t) const;
  // best(end); nullopt when never correct.
  std::optional<double> Final() const;
};

// Validates `job` and builds its curve on `axis`.
absl::StatusOr<BestSoFarCurve> ComputeBestSoFar(const JobTrajectory& job, TimeAxis axis);

std::optional<double> TimeToFirstCorrect(const BestSoFarCurve& curve);
// Earliest t with best(t) >= fraction * best(end); `fraction` in (0, 1].
std::optional<double> TimeToFraction(const BestSoFarCurve& curve, double fraction);

struct OnsetOptions {
  double epsilon = 0.01;           // relative; >= 0
  std::optional<double> window_s;  // > 0 selects the window definition
  // Without a window: the minimum run time after the onset. When min_tail_s is
  // unset it is min_tail_fraction * end_s.
  double min_tail_fraction = 0.10;   // in [0, 1]
  std::optional<double> min_tail_s;  // >= 0
};
absl::Status ValidateOnsetOptions(const OnsetOptions& options);
// Plateau onset as defined above; nullopt when there is none. `options` must
// be valid (ValidateOnsetOptions).
std::optional<double> PlateauOnset(const BestSoFarCurve& curve, const OnsetOptions& options);

struct FastPPoint {
  double t = 0;
  double share = 0;      // in [0, 1]; 0 for an empty set
  int jobs_running = 0;  // jobs whose run had not ended before t
};
struct FastPCurve {
  double p = 0;
  std::vector<FastPPoint> points;  // one per grid time, in grid order
};
// One curve per p, evaluated at each time of `grid`.
std::vector<FastPCurve> ComputeFastP(const std::vector<BestSoFarCurve>& curves,
                                     const std::vector<double>& ps,
                                     const std::vector<double>& grid);

struct TruncationSummary {
  double budget_s = 0;
  int jobs = 0;
  int jobs_correct = 0;       // with a correct candidate by the budget
  double share_correct = 0;   // jobs_correct / jobs; 0 for an empty set
  int jobs_ended_before = 0;  // runs shorter than the budget (kept at final)
  // Over the jobs correct by the budget; nullopt when there are none.
  std::optional<double> mean_best, median_best, p10_best, p90_best, geomean_best;
};
TruncationSummary SummarizeBudget(const std::vector<BestSoFarCurve>& curves, double budget_s);

struct BandPoint {
  double t = 0;
  double median = 0, p10 = 0, p90 = 0;  // speedup; 0 = no correct candidate yet
  int jobs_correct = 0;
  int jobs_running = 0;
};
// The group curve defined above (empty for an empty set). `extra_times` are
// added to the evaluation times where they lie within [0, max end].
std::vector<BandPoint> ComputeMedianBand(const std::vector<BestSoFarCurve>& curves,
                                         const std::vector<double>& extra_times);

// Linear-interpolation quantile (type 7) of `values`, q in [0, 1]; nullopt for
// an empty vector. Exposed for the exporters and tests.
std::optional<double> Quantile(std::vector<double> values, double q);

enum class GroupKey { kModel, kStrategy, kProblem, kAgentKind, kLabel };
std::string_view GroupKeyName(GroupKey key);  // "model", "strategy", ...
absl::StatusOr<GroupKey> ParseGroupKey(std::string_view name);

struct PlateauOptions {
  TimeAxis axis = TimeAxis::kElapsed;
  OnsetOptions onset;
  std::vector<double> fractions = {0.5, 0.9, 0.99};   // each in (0, 1]
  std::vector<double> fast_p = {0.0, 1.0, 1.5, 2.0};  // each >= 0
  // Times for fast_p and extra group-curve points. Empty: auto_grid_points
  // evenly spaced times from 0 to the longest run's end.
  std::vector<double> time_grid;
  int auto_grid_points = 50;      // >= 2
  std::vector<double> budgets_s;  // truncation summaries; empty = none
  // Groups are keyed by these fields in this order; empty = one group "all".
  std::vector<GroupKey> group_by = {GroupKey::kAgentKind, GroupKey::kModel, GroupKey::kStrategy};
};
absl::Status ValidatePlateauOptions(const PlateauOptions& options);

struct JobSummary {
  std::string job_id, problem, model, strategy, agent_kind, label;
  BestSoFarCurve curve;
  std::optional<double> first_correct_s;
  std::optional<double> final_best;
  // Parallel to PlateauOptions::fractions.
  std::vector<std::optional<double>> time_to_fraction_s;
  std::optional<double> plateau_onset_s;
  std::optional<double> best_at_onset;  // best(onset), for markers and tables
  // The highest multi-size score among the job's correct comparable
  // evaluations (size-ladder jobs, issue #17 item 5); none without a ladder.
  std::optional<double> best_multi_size_score;
};

struct GroupSummary {
  std::vector<std::string> key_values;  // parallel to PlateauOptions::group_by
  std::string name;                     // "llm / gpt-4o / tree"; "(none)" for an empty value; "all"
  std::vector<int> job_indices;         // into PlateauReport::jobs, in input order
  int jobs = 0;
  int jobs_correct = 0;
  double share_correct = 0;
  int jobs_with_plateau = 0;
  std::optional<double> median_final_best;       // among jobs ever correct
  std::optional<double> median_plateau_onset_s;  // among jobs with an onset
  std::optional<double> median_first_correct_s;  // among jobs ever correct
  std::vector<BandPoint> curve;
  std::vector<FastPCurve> fast_p;
  std::vector<TruncationSummary> truncation;  // parallel to budgets_s
};

struct PlateauReport {
  PlateauOptions options;                     // as given, except time_grid: the grid actually used
  std::vector<JobSummary> jobs;               // in input order
  std::vector<GroupSummary> groups;           // sorted by key values
  std::vector<FastPCurve> fast_p;             // over all jobs
  std::vector<TruncationSummary> truncation;  // over all jobs, parallel to budgets_s
};

// Validates the options and every job (INVALID_ARGUMENT on the first problem,
// also for a repeated job_id) and computes everything above.
absl::StatusOr<PlateauReport> BuildPlateauReport(const std::vector<JobTrajectory>& jobs,
                                                 const PlateauOptions& options);

}  // namespace pkforge::storage
