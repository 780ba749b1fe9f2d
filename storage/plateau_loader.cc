#include "storage/plateau_loader.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <numeric>

#include "common/status.h"
#include "fmt/format.h"

namespace pkforge::storage {

std::optional<double> MultiSizeScore(std::string_view json) {
  for (std::string_view key : {"\"multi_size_score\"", "\"multiSizeScore\""}) {
    const size_t at = json.find(key);
    if (at == std::string_view::npos) continue;
    size_t i = at + key.size();
    while (i < json.size() && (json[i] == ' ' || json[i] == ':' || json[i] == '\n')) ++i;
    const std::string number(json.substr(i, std::min<size_t>(40, json.size() - i)));
    char* end = nullptr;
    const double v = std::strtod(number.c_str(), &end);
    if (end == number.c_str() || !std::isfinite(v) || v <= 0) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

JobTrajectory TrajectoryFromRecords(const JobRecord& job,
                                    const std::vector<EvaluationRecord>& evaluations,
                                    int64_t now_wall_us) {
  JobTrajectory out;
  out.job_id = job.id;
  out.problem = job.problem;
  out.model = job.model;
  out.strategy = job.strategy;
  out.agent_kind = job.agent_kind;
  out.label = job.label;

  // The store lists evaluations in elapsed order already; sorting again (stably)
  // keeps this function correct for any caller. The final re-measurement is
  // the job's result, not a step of its search: it is left out.
  std::vector<size_t> order;
  order.reserve(evaluations.size());
  for (size_t i = 0; i < evaluations.size(); ++i) {
    if (evaluations[i].role != kRoleFinal) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return evaluations[a].elapsed_ms < evaluations[b].elapsed_ms;
  });

  double queued_ms = 0;  // queue time of evaluations completed so far
  double prev_active_s = 0;
  double last_elapsed_s = 0;
  out.points.reserve(order.size());
  for (size_t i = 0; i < order.size();) {
    // Evaluations completing at the same instant all count as "at or before"
    // each other, so add their queue times before computing any of them.
    size_t j = i;
    const int64_t elapsed_ms = evaluations[order[i]].elapsed_ms;
    while (j < order.size() && evaluations[order[j]].elapsed_ms == elapsed_ms) {
      queued_ms += std::max(0.0, evaluations[order[j]].queue_ms);
      ++j;
    }
    const double elapsed_s = std::max<int64_t>(0, elapsed_ms) / 1000.0;
    const double active_s =
        std::min(elapsed_s, std::max(prev_active_s, elapsed_s - queued_ms / 1000.0));
    for (; i < j; ++i) {
      const EvaluationRecord& e = evaluations[order[i]];
      EvalPoint p;
      p.elapsed_s = elapsed_s;
      p.active_s = active_s;
      p.correct = e.correct && e.speedup.has_value();
      p.speedup = p.correct ? *e.speedup : 0.0;
      p.comparable = e.comparable;
      p.multi_size_score = MultiSizeScore(e.result_json);
      out.points.push_back(p);
    }
    prev_active_s = active_s;
    last_elapsed_s = elapsed_s;
  }

  double duration_s = last_elapsed_s;
  if (job.started_wall_us > 0) {
    const int64_t end_us = job.finished_wall_us > 0 ? job.finished_wall_us : now_wall_us;
    duration_s = std::max<int64_t>(0, end_us - job.started_wall_us) / 1e6;
  }
  out.duration_s = std::max(duration_s, last_elapsed_s);
  return out;
}

absl::StatusOr<JobTrajectory> LoadJobTrajectory(TrajectoryStore& store, std::string_view job_id,
                                                const Clock* clock) {
  const std::string context = fmt::format("loading trajectory of job '{}'", job_id);
  absl::StatusOr<JobRecord> job = store.GetJob(job_id);
  if (!job.ok()) return Annotate(job.status(), context);
  absl::StatusOr<std::vector<EvaluationRecord>> evaluations = store.ListEvaluationPoints(job_id);
  if (!evaluations.ok()) return Annotate(evaluations.status(), context);
  return TrajectoryFromRecords(*job, *evaluations, clock->NowWallMicros());
}

absl::StatusOr<std::vector<JobTrajectory>> LoadJobTrajectories(TrajectoryStore& store,
                                                               const JobFilter& filter,
                                                               const Clock* clock) {
  // Without specs and result texts (ListJobSummaries, ListEvaluationPoints):
  // up to 100,000 jobs, whose specs and results can hold whole sources.
  absl::StatusOr<std::vector<JobRecord>> jobs = store.ListJobSummaries(filter);
  if (!jobs.ok()) return Annotate(jobs.status(), "listing jobs for plateau analysis");
  // One clock reading for the whole set, so running jobs are cut at the same instant.
  const int64_t now_wall_us = clock->NowWallMicros();
  std::vector<JobTrajectory> out;
  out.reserve(jobs->size());
  for (const JobRecord& job : *jobs) {
    absl::StatusOr<std::vector<EvaluationRecord>> evaluations = store.ListEvaluationPoints(job.id);
    if (!evaluations.ok()) {
      return Annotate(evaluations.status(), fmt::format("loading trajectory of job '{}'", job.id));
    }
    out.push_back(TrajectoryFromRecords(job, *evaluations, now_wall_us));
  }
  return out;
}

}  // namespace pkforge::storage
