#include "storage/plateau.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "common/stats.h"
#include "common/status.h"
#include "fmt/format.h"

namespace pkforge::storage {
namespace {

absl::Status PointError(const JobTrajectory& job, size_t index, std::string_view what) {
  return absl::InvalidArgumentError(fmt::format("job '{}': point {}: {}", job.job_id, index, what));
}

bool IsNonNegativeFinite(double v) { return std::isfinite(v) && v >= 0; }

// "improves by less than epsilon, or not at all" (see the header): the exact
// equality keeps epsilon = 0 meaningful ("no improvement whatsoever").
bool ImprovesLessThan(double later, double earlier, double epsilon) {
  return later == earlier || later < earlier * (1.0 + epsilon);
}

struct TimedPoint {
  double t;
  bool correct;
  double speedup;
};

std::string GroupValue(const JobTrajectory& job, GroupKey key) {
  switch (key) {
    case GroupKey::kModel:
      return job.model;
    case GroupKey::kStrategy:
      return job.strategy;
    case GroupKey::kProblem:
      return job.problem;
    case GroupKey::kAgentKind:
      return job.agent_kind;
    case GroupKey::kLabel:
      return job.label;
  }
  return "";
}

std::vector<double> SortedUnique(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

std::string_view TimeAxisName(TimeAxis axis) {
  return axis == TimeAxis::kActive ? "active" : "elapsed";
}

absl::StatusOr<TimeAxis> ParseTimeAxis(std::string_view name) {
  if (name == "elapsed") return TimeAxis::kElapsed;
  if (name == "active") return TimeAxis::kActive;
  return absl::InvalidArgumentError(
      fmt::format("unknown time axis '{}' (want 'elapsed' or 'active')", name));
}

std::string_view GroupKeyName(GroupKey key) {
  switch (key) {
    case GroupKey::kModel:
      return "model";
    case GroupKey::kStrategy:
      return "strategy";
    case GroupKey::kProblem:
      return "problem";
    case GroupKey::kAgentKind:
      return "agent_kind";
    case GroupKey::kLabel:
      return "label";
  }
  return "?";
}

absl::StatusOr<GroupKey> ParseGroupKey(std::string_view name) {
  for (GroupKey key : {GroupKey::kModel, GroupKey::kStrategy, GroupKey::kProblem,
                       GroupKey::kAgentKind, GroupKey::kLabel}) {
    if (GroupKeyName(key) == name) return key;
  }
  return absl::InvalidArgumentError(fmt::format(
      "unknown group key '{}' (want model, strategy, problem, agent_kind or label)", name));
}

absl::Status ValidateTrajectory(const JobTrajectory& job) {
  if (job.job_id.empty()) return absl::InvalidArgumentError("trajectory has an empty job_id");
  if (!IsNonNegativeFinite(job.duration_s)) {
    return absl::InvalidArgumentError(fmt::format(
        "job '{}': duration_s must be finite and >= 0, got {}", job.job_id, job.duration_s));
  }
  for (size_t i = 0; i < job.points.size(); ++i) {
    const EvalPoint& p = job.points[i];
    if (!IsNonNegativeFinite(p.elapsed_s)) {
      return PointError(job, i,
                        fmt::format("elapsed_s must be finite and >= 0, got {}", p.elapsed_s));
    }
    if (!IsNonNegativeFinite(p.active_s)) {
      return PointError(job, i,
                        fmt::format("active_s must be finite and >= 0, got {}", p.active_s));
    }
    if (p.active_s > p.elapsed_s) {
      return PointError(job, i,
                        fmt::format("active_s {} exceeds elapsed_s {}", p.active_s, p.elapsed_s));
    }
    if (p.elapsed_s > job.duration_s) {
      return PointError(job, i,
                        fmt::format("elapsed_s {} is after the run's end (duration_s {})",
                                    p.elapsed_s, job.duration_s));
    }
    if (p.correct && !(std::isfinite(p.speedup) && p.speedup > 0)) {
      return PointError(
          job, i, fmt::format("correct point has speedup {} (want finite and > 0)", p.speedup));
    }
  }
  return absl::OkStatus();
}

std::optional<double> BestSoFarCurve::At(double t) const {
  auto it = std::upper_bound(steps.begin(), steps.end(), t,
                             [](double time, const Step& s) { return time < s.t; });
  if (it == steps.begin()) return std::nullopt;
  return std::prev(it)->best;
}

std::optional<double> BestSoFarCurve::Final() const {
  if (steps.empty()) return std::nullopt;
  return steps.back().best;
}

absl::StatusOr<BestSoFarCurve> ComputeBestSoFar(const JobTrajectory& job, TimeAxis axis) {
  RETURN_IF_ERROR(ValidateTrajectory(job));
  std::vector<TimedPoint> points;
  points.reserve(job.points.size());
  BestSoFarCurve curve;
  double max_queue_s = 0, max_active_s = 0;
  for (const EvalPoint& p : job.points) {
    max_queue_s = std::max(max_queue_s, p.elapsed_s - p.active_s);
    max_active_s = std::max(max_active_s, p.active_s);
    ++curve.evaluations;
    if (!p.comparable) {
      ++curve.other_evaluations;
      if (p.correct && (!curve.other_best || p.speedup > *curve.other_best)) {
        curve.other_best = p.speedup;
      }
      continue;
    }
    points.push_back({axis == TimeAxis::kActive ? p.active_s : p.elapsed_s, p.correct, p.speedup});
    if (p.correct) ++curve.correct_evaluations;
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const TimedPoint& a, const TimedPoint& b) { return a.t < b.t; });
  for (const TimedPoint& p : points) {
    if (!p.correct) continue;
    if (!curve.steps.empty() && p.speedup <= curve.steps.back().best) continue;
    if (!curve.steps.empty() && curve.steps.back().t == p.t) {
      curve.steps.back().best = p.speedup;  // same instant: one step, the best of them
    } else {
      curve.steps.push_back({p.t, p.speedup});
    }
  }
  curve.end_s = axis == TimeAxis::kActive ? std::max(job.duration_s - max_queue_s, max_active_s)
                                          : job.duration_s;
  return curve;
}

std::optional<double> TimeToFirstCorrect(const BestSoFarCurve& curve) {
  if (curve.steps.empty()) return std::nullopt;
  return curve.steps.front().t;
}

std::optional<double> TimeToFraction(const BestSoFarCurve& curve, double fraction) {
  if (curve.steps.empty() || !(fraction > 0 && fraction <= 1)) return std::nullopt;
  const double threshold = fraction * curve.steps.back().best;
  for (const Step& s : curve.steps) {
    if (s.best >= threshold) return s.t;
  }
  return curve.steps.back().t;  // unreachable: the last step meets any fraction <= 1
}

absl::Status ValidateOnsetOptions(const OnsetOptions& options) {
  if (!IsNonNegativeFinite(options.epsilon)) {
    return absl::InvalidArgumentError(
        fmt::format("plateau epsilon must be finite and >= 0, got {}", options.epsilon));
  }
  if (options.window_s && !(std::isfinite(*options.window_s) && *options.window_s > 0)) {
    return absl::InvalidArgumentError(
        fmt::format("plateau window_s must be finite and > 0, got {}", *options.window_s));
  }
  if (!(options.min_tail_fraction >= 0 && options.min_tail_fraction <= 1)) {
    return absl::InvalidArgumentError(fmt::format(
        "plateau min_tail_fraction must be in [0, 1], got {}", options.min_tail_fraction));
  }
  if (options.min_tail_s && !IsNonNegativeFinite(*options.min_tail_s)) {
    return absl::InvalidArgumentError(
        fmt::format("plateau min_tail_s must be finite and >= 0, got {}", *options.min_tail_s));
  }
  return absl::OkStatus();
}

std::optional<double> PlateauOnset(const BestSoFarCurve& curve, const OnsetOptions& options) {
  if (curve.steps.empty()) return std::nullopt;
  if (options.window_s) {
    const double w = *options.window_s;
    for (const Step& s : curve.steps) {
      // Steps are in time order: once a window runs past the end, so do all later ones.
      if (s.t + w > curve.end_s) return std::nullopt;
      if (ImprovesLessThan(*curve.At(s.t + w), s.best, options.epsilon)) return s.t;
    }
    return std::nullopt;
  }
  const double final_best = curve.steps.back().best;
  const double min_tail = options.min_tail_s.value_or(options.min_tail_fraction * curve.end_s);
  for (const Step& s : curve.steps) {
    if (ImprovesLessThan(final_best, s.best, options.epsilon)) {
      // Later steps have even less tail, so this is the only candidate.
      if (curve.end_s - s.t >= min_tail) return s.t;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<double> Quantile(std::vector<double> values, double q) {
  if (values.empty()) return std::nullopt;
  return pkforge::Quantile(std::move(values), q);
}

std::vector<FastPCurve> ComputeFastP(const std::vector<BestSoFarCurve>& curves,
                                     const std::vector<double>& ps,
                                     const std::vector<double>& grid) {
  std::vector<FastPCurve> out;
  out.reserve(ps.size());
  for (double p : ps) {
    FastPCurve fc;
    fc.p = p;
    for (double t : grid) {
      FastPPoint point;
      point.t = t;
      int hits = 0;
      for (const BestSoFarCurve& c : curves) {
        // A job past its end keeps its final best: At() needs no clamping
        // because no step lies after end_s.
        std::optional<double> best = c.At(t);
        if (best && *best > p) ++hits;
        if (c.end_s >= t) ++point.jobs_running;
      }
      point.share = curves.empty() ? 0.0 : static_cast<double>(hits) / curves.size();
      fc.points.push_back(point);
    }
    out.push_back(std::move(fc));
  }
  return out;
}

TruncationSummary SummarizeBudget(const std::vector<BestSoFarCurve>& curves, double budget_s) {
  TruncationSummary s;
  s.budget_s = budget_s;
  s.jobs = static_cast<int>(curves.size());
  std::vector<double> bests;
  for (const BestSoFarCurve& c : curves) {
    if (c.end_s < budget_s) ++s.jobs_ended_before;
    if (std::optional<double> best = c.At(budget_s)) bests.push_back(*best);
  }
  s.jobs_correct = static_cast<int>(bests.size());
  s.share_correct = s.jobs == 0 ? 0.0 : static_cast<double>(s.jobs_correct) / s.jobs;
  if (!bests.empty()) {
    double sum = 0, log_sum = 0;
    for (double b : bests) {
      sum += b;
      log_sum += std::log(b);
    }
    const double n = static_cast<double>(bests.size());
    s.mean_best = sum / n;
    s.geomean_best = std::exp(log_sum / n);
    s.median_best = Quantile(bests, 0.5);
    s.p10_best = Quantile(bests, 0.1);
    s.p90_best = Quantile(bests, 0.9);
  }
  return s;
}

std::vector<BandPoint> ComputeMedianBand(const std::vector<BestSoFarCurve>& curves,
                                         const std::vector<double>& extra_times) {
  if (curves.empty()) return {};
  double max_end = 0;
  std::vector<double> times = {0.0};
  for (const BestSoFarCurve& c : curves) {
    max_end = std::max(max_end, c.end_s);
    times.push_back(c.end_s);  // jobs_running changes there
    for (const Step& s : c.steps) times.push_back(s.t);
  }
  for (double t : extra_times) {
    if (t >= 0 && t <= max_end) times.push_back(t);
  }
  times = SortedUnique(std::move(times));

  // Sweep the times in order with one cursor per job, so the whole band costs
  // O(times * jobs * log jobs) instead of a binary search per job and time.
  std::vector<size_t> next_step(curves.size(), 0);
  std::vector<double> values(curves.size());
  std::vector<BandPoint> out;
  out.reserve(times.size());
  for (double t : times) {
    BandPoint point;
    point.t = t;
    for (size_t j = 0; j < curves.size(); ++j) {
      const std::vector<Step>& steps = curves[j].steps;
      while (next_step[j] < steps.size() && steps[next_step[j]].t <= t) ++next_step[j];
      if (next_step[j] > 0) {
        values[j] = steps[next_step[j] - 1].best;
        ++point.jobs_correct;
      } else {
        values[j] = 0;  // no correct candidate yet counts as 0 (see the header)
      }
      if (curves[j].end_s >= t) ++point.jobs_running;
    }
    std::sort(values.begin(), values.end());
    auto sorted_quantile = [&](double q) {
      const double h = static_cast<double>(values.size() - 1) * q;
      const size_t lo = static_cast<size_t>(std::floor(h));
      const size_t hi = std::min(lo + 1, values.size() - 1);
      return values[lo] + (h - static_cast<double>(lo)) * (values[hi] - values[lo]);
    };
    point.median = sorted_quantile(0.5);
    point.p10 = sorted_quantile(0.1);
    point.p90 = sorted_quantile(0.9);
    out.push_back(point);
  }
  return out;
}

absl::Status ValidatePlateauOptions(const PlateauOptions& options) {
  RETURN_IF_ERROR(ValidateOnsetOptions(options.onset));
  for (double f : options.fractions) {
    if (!(f > 0 && f <= 1)) {
      return absl::InvalidArgumentError(fmt::format("fraction {} is not in (0, 1]", f));
    }
  }
  for (double p : options.fast_p) {
    if (!IsNonNegativeFinite(p)) {
      return absl::InvalidArgumentError(
          fmt::format("fast_p threshold {} must be finite and >= 0", p));
    }
  }
  for (double t : options.time_grid) {
    if (!IsNonNegativeFinite(t)) {
      return absl::InvalidArgumentError(
          fmt::format("time grid point {} must be finite and >= 0", t));
    }
  }
  if (options.time_grid.empty() &&
      (options.auto_grid_points < 2 || options.auto_grid_points > 1'000'000)) {
    return absl::InvalidArgumentError(
        fmt::format("auto_grid_points must be in [2, 1000000], got {}", options.auto_grid_points));
  }
  for (double b : options.budgets_s) {
    if (!IsNonNegativeFinite(b)) {
      return absl::InvalidArgumentError(fmt::format("budget {} must be finite and >= 0", b));
    }
  }
  std::set<GroupKey> seen;
  for (GroupKey key : options.group_by) {
    if (!seen.insert(key).second) {
      return absl::InvalidArgumentError(
          fmt::format("group key '{}' given twice", GroupKeyName(key)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<PlateauReport> BuildPlateauReport(const std::vector<JobTrajectory>& jobs,
                                                 const PlateauOptions& options) {
  RETURN_IF_ERROR(ValidatePlateauOptions(options));
  PlateauReport report;
  report.options = options;

  std::set<std::string_view> ids;
  std::vector<BestSoFarCurve> curves;
  curves.reserve(jobs.size());
  double max_end = 0;
  for (const JobTrajectory& job : jobs) {
    if (!ids.insert(job.job_id).second) {
      return absl::InvalidArgumentError(
          fmt::format("job '{}' appears twice in the job set", job.job_id));
    }
    ASSIGN_OR_RETURN(BestSoFarCurve curve, ComputeBestSoFar(job, options.axis));
    max_end = std::max(max_end, curve.end_s);
    JobSummary s;
    s.job_id = job.job_id;
    s.problem = job.problem;
    s.model = job.model;
    s.strategy = job.strategy;
    s.agent_kind = job.agent_kind;
    s.label = job.label;
    s.first_correct_s = TimeToFirstCorrect(curve);
    s.final_best = curve.Final();
    for (const EvalPoint& p : job.points) {
      if (p.correct && p.comparable && p.multi_size_score && *p.multi_size_score > 0 &&
          (!s.best_multi_size_score || *p.multi_size_score > *s.best_multi_size_score))
        s.best_multi_size_score = p.multi_size_score;
    }
    for (double f : options.fractions) s.time_to_fraction_s.push_back(TimeToFraction(curve, f));
    s.plateau_onset_s = PlateauOnset(curve, options.onset);
    if (s.plateau_onset_s) s.best_at_onset = curve.At(*s.plateau_onset_s);
    s.curve = curve;
    curves.push_back(std::move(curve));
    report.jobs.push_back(std::move(s));
  }

  std::vector<double>& grid = report.options.time_grid;
  if (grid.empty() && !jobs.empty()) {
    const int n = options.auto_grid_points;
    for (int i = 0; i + 1 < n; ++i) grid.push_back(max_end * i / (n - 1));
    grid.push_back(max_end);  // exactly, not as rounded by the division
  }
  grid = SortedUnique(std::move(grid));

  report.fast_p = ComputeFastP(curves, options.fast_p, grid);
  for (double b : options.budgets_s) report.truncation.push_back(SummarizeBudget(curves, b));

  std::map<std::vector<std::string>, std::vector<int>> members;  // sorted by key values
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::vector<std::string> key;
    for (GroupKey k : options.group_by) key.push_back(GroupValue(jobs[i], k));
    members[std::move(key)].push_back(static_cast<int>(i));
  }
  for (auto& [key, indices] : members) {
    GroupSummary g;
    g.key_values = key;
    if (key.empty()) {
      g.name = "all";
    } else {
      for (size_t k = 0; k < key.size(); ++k) {
        if (k > 0) g.name += " / ";
        g.name += key[k].empty() ? "(none)" : key[k];
      }
    }
    g.job_indices = indices;
    g.jobs = static_cast<int>(indices.size());
    std::vector<BestSoFarCurve> group_curves;
    std::vector<double> finals, onsets, firsts;
    for (int i : indices) {
      const JobSummary& s = report.jobs[i];
      group_curves.push_back(curves[i]);
      if (s.final_best) finals.push_back(*s.final_best);
      if (s.plateau_onset_s) onsets.push_back(*s.plateau_onset_s);
      if (s.first_correct_s) firsts.push_back(*s.first_correct_s);
    }
    g.jobs_correct = static_cast<int>(finals.size());
    g.share_correct = static_cast<double>(g.jobs_correct) / g.jobs;
    g.jobs_with_plateau = static_cast<int>(onsets.size());
    g.median_final_best = Quantile(finals, 0.5);
    g.median_plateau_onset_s = Quantile(onsets, 0.5);
    g.median_first_correct_s = Quantile(firsts, 0.5);
    g.curve = ComputeMedianBand(group_curves, grid);
    g.fast_p = ComputeFastP(group_curves, options.fast_p, grid);
    for (double b : options.budgets_s) g.truncation.push_back(SummarizeBudget(group_curves, b));
    report.groups.push_back(std::move(g));
  }
  return report;
}

}  // namespace pkforge::storage
