// Analysis commands: `pkforge jobs`, `pkforge trajectory JOB`, `pkforge
// plateau`. With --db PATH they read a trajectory database directly, with no
// server running (researchers analyse finished runs offline); without it they
// ask a running orchestrator (ListJobs, GetTrajectory, AnalyzePlateau, see
// cli/remote.h). Both paths print the same tables and JSON: remote answers
// are converted to the storage records the offline path prints. --db opens
// the file read-only and never migrates it (cli/offline.h).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "cli/offline.h"
#include "cli/output.h"
#include "cli/remote.h"
#include "common/clock.h"
#include "common/status.h"
#include "convert/convert.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "storage/plateau.h"
#include "storage/plateau_export.h"
#include "storage/plateau_loader.h"
#include "storage/store.h"

namespace pkforge::cli {
namespace {

using storage::JobFilter;
using storage::TrajectoryStore;

std::string Fmt(const std::optional<double>& v, const char* fmt = "%.3f") {
  if (!v) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, *v);
  return buf;
}

struct FilterOptions {
  std::string problem, model, strategy, agent, label;
  void Add(CLI::App* cmd) {
    cmd->add_option("--problem", problem, "Only jobs of this problem");
    cmd->add_option("--model", model, "Only jobs of this model");
    cmd->add_option("--strategy", strategy, "Only jobs of this strategy");
    cmd->add_option("--agent", agent, "Only jobs of this agent kind (llm|search|replay)");
    cmd->add_option("--label", label, "Only jobs with this label");
  }
  JobFilter ToFilter() const {
    JobFilter f;
    f.problem = problem;
    f.model = model;
    f.strategy = strategy;
    f.agent_kind = agent;
    f.label = label;
    f.limit = 100000;
    return f;
  }
};

// ------------------------------------------------------------------ jobs --

struct JobsOptions {
  std::string db;
  RemoteOptions remote;
  FilterOptions filter;
  std::string output = "table";
};

// ------------------------------------------------- remote -> storage records

// A job as the tables print it: its row, and its result (the final fresh
// re-measurement, convert.h) when there is one.
struct JobRow {
  storage::JobRecord job;
  std::optional<double> final_speedup;
};

absl::StatusOr<std::vector<JobRow>> RemoteJobs(const JobsOptions& o) {
  ASSIGN_OR_RETURN(Remote remote, Remote::Connect(o.remote));
  std::vector<JobRow> out;
  v1::ListJobsRequest req;
  req.set_problem(o.filter.problem);
  req.set_model(o.filter.model);
  req.set_label(o.filter.label);
  req.set_page_size(1000);
  while (true) {
    v1::ListJobsResponse resp;
    auto ctx = remote.Context();
    grpc::Status st = remote.stub()->ListJobs(ctx.get(), req, &resp);
    if (!st.ok()) return RemoteError(remote, st);
    for (const auto& j : resp.jobs()) {
      storage::JobRecord r = convert::JobRecordFromProto(j);
      // The API filters by problem, model and label; the rest here.
      if (!o.filter.strategy.empty() && r.strategy != o.filter.strategy) continue;
      if (!o.filter.agent.empty() && r.agent_kind != o.filter.agent) continue;
      out.push_back({std::move(r), j.has_final_speedup() ? std::optional<double>(j.final_speedup())
                                                         : std::nullopt});
    }
    if (resp.next_page_token().empty()) break;
    req.set_page_token(resp.next_page_token());
  }
  return out;
}

absl::StatusOr<std::vector<JobRow>> OfflineJobs(const JobsOptions& o) {
  ASSIGN_OR_RETURN(std::unique_ptr<TrajectoryStore> store, OpenDb(o.db));
  ASSIGN_OR_RETURN(std::vector<storage::JobRecord> records, store->ListJobs(o.filter.ToFilter()));
  std::vector<JobRow> out;
  out.reserve(records.size());
  for (auto& r : records) {
    ASSIGN_OR_RETURN(storage::JobStats stats, store->GetJobStats(r.id));
    out.push_back({std::move(r), stats.final_speedup});
  }
  return out;
}

int RunJobs(const JobsOptions& o) {
  absl::StatusOr<std::vector<JobRow>> rows = o.db.empty() ? RemoteJobs(o) : OfflineJobs(o);
  if (!rows.ok()) return ReportStatus("jobs", rows.status());
  // best_speedup: the best of the search's evaluations at the job's own
  // settings; final_speedup: the job's result, one fresh re-measurement.
  std::vector<storage::JobRecord> records;
  std::vector<std::optional<double>> finals;
  for (auto& r : *rows) {
    records.push_back(std::move(r.job));
    finals.push_back(r.final_speedup);
  }
  const std::vector<storage::JobRecord>* jobs = &records;
  if (o.output == "csv") {
    std::printf("%s", CsvLine({"id", "state", "problem", "backend", "world_size", "agent_kind",
                               "model", "strategy", "label", "created", "best_speedup",
                               "final_speedup"}).c_str());
    for (size_t i = 0; i < jobs->size(); ++i) {
      const auto& j = (*jobs)[i];
      std::printf("%s", CsvLine({j.id, std::string(storage::JobStateName(j.state)), j.problem,
                                 j.backend, std::to_string(j.world_size), j.agent_kind, j.model,
                                 j.strategy, j.label, FormatWallMicros(j.created_wall_us),
                                 j.best_speedup ? Fmt(j.best_speedup, "%.6g") : "",
                                 finals[i] ? Fmt(finals[i], "%.6g") : ""}).c_str());
    }
    return kExitOk;
  }
  if (o.output == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < jobs->size(); ++i) {
      const auto& j = (*jobs)[i];
      nlohmann::json row = {{"id", j.id},
                            {"state", std::string(storage::JobStateName(j.state))},
                            {"problem", j.problem},
                            {"backend", j.backend},
                            {"world_size", j.world_size},
                            {"agent_kind", j.agent_kind},
                            {"model", j.model},
                            {"strategy", j.strategy},
                            {"label", j.label},
                            {"created", FormatWallMicros(j.created_wall_us)}};
      row["best_speedup"] = j.best_speedup ? nlohmann::json(*j.best_speedup) : nlohmann::json();
      row["final_speedup"] = finals[i] ? nlohmann::json(*finals[i]) : nlohmann::json();
      out.push_back(row);
    }
    std::printf("%s\n", DumpJson(out).c_str());
    return kExitOk;
  }
  std::printf("%-31s %-11s %-18s %-7s %-3s %-7s %-20s %-10s %8s %8s\n", "JOB", "STATE",
              "PROBLEM", "BACKEND", "WS", "AGENT", "MODEL", "STRATEGY", "BEST", "FINAL");
  for (size_t i = 0; i < jobs->size(); ++i) {
    const auto& j = (*jobs)[i];
    std::printf("%-31s %-11s %-18s %-7s %-3d %-7s %-20s %-10s %8s %8s\n", j.id.c_str(),
                std::string(storage::JobStateName(j.state)).c_str(), j.problem.c_str(),
                j.backend.c_str(), j.world_size, j.agent_kind.c_str(),
                j.model.empty() ? "-" : j.model.c_str(), j.strategy.c_str(),
                j.best_speedup ? (Fmt(j.best_speedup, "%.3f") + "x").c_str() : "-",
                finals[i] ? (Fmt(finals[i], "%.3f") + "x").c_str() : "-");
  }
  std::printf("BEST: best of the evaluations at each job's own settings; FINAL: the job's result, "
              "one fresh re-measurement of its chosen candidate\n");
  std::printf("%zu job(s)\n", jobs->size());
  return kExitOk;
}

// ------------------------------------------------------------ trajectory --

struct TrajectoryOptions {
  std::string db;
  RemoteOptions remote;
  std::string job_id;
  std::string format = "table";
};

absl::Status RemoteTrajectory(const TrajectoryOptions& o, storage::JobRecord* job,
                              std::vector<storage::EvaluationRecord>* evals) {
  ASSIGN_OR_RETURN(Remote remote, Remote::Connect(o.remote));
  v1::GetTrajectoryRequest req;
  req.set_job_id(o.job_id);
  v1::Trajectory traj;
  auto ctx = remote.Context();
  grpc::Status st = remote.stub()->GetTrajectory(ctx.get(), req, &traj);
  if (!st.ok()) return RemoteError(remote, st);
  *job = convert::JobRecordFromProto(traj.job());
  for (const auto& e : traj.evaluations()) {
    storage::EvaluationRecord r;
    r.id = e.id();
    r.job_id = job->id;
    r.turn_id = e.turn_id();
    r.candidate_sha256 = e.candidate_sha256();
    r.status = v1::EvaluationResult::Status_Name(e.status());
    r.correct = e.status() == v1::EvaluationResult::OK;
    if (e.has_speedup()) r.speedup = e.speedup();
    r.executor = e.executor();
    r.queue_ms = e.stages().queue_ms();
    r.compile_ms = e.stages().compile_ms();
    r.run_ms = e.stages().run_ms();
    r.elapsed_ms = e.elapsed_ms();
    r.timed_iters = e.timed_iters();
    r.trials = e.trials();
    r.comparable = !e.other_settings();
    r.role = e.final_measurement() ? storage::kRoleFinal : storage::kRoleSearch;
    evals->push_back(std::move(r));
  }
  return absl::OkStatus();
}

int RunTrajectory(const TrajectoryOptions& o) {
  absl::StatusOr<storage::JobRecord> job;
  absl::StatusOr<std::vector<storage::EvaluationRecord>> evals;
  if (o.db.empty()) {
    storage::JobRecord j;
    std::vector<storage::EvaluationRecord> e;
    if (auto s = RemoteTrajectory(o, &j, &e); !s.ok()) return ReportStatus("trajectory", s);
    job = std::move(j);
    evals = std::move(e);
  } else {
    auto store = OpenDb(o.db);
    if (!store.ok()) return ReportStatus("trajectory", store.status());
    job = (*store)->GetJob(o.job_id);
    if (!job.ok()) return ReportStatus("trajectory", job.status());
    evals = (*store)->ListEvaluations(o.job_id);
  }
  if (!evals.ok()) return ReportStatus("trajectory", evals.status());
  storage::JobTrajectory traj =
      storage::TrajectoryFromRecords(*job, *evals, SystemClock::Get()->NowWallMicros());
  // best-so-far alongside each evaluation, in elapsed order.
  double best = 0;
  if (o.format == "csv") {
    std::printf(
        "evaluation_id,elapsed_s,active_s,status,correct,speedup,best_so_far,queue_ms,"
        "compile_ms,run_ms,candidate_sha256,timed_iters,kind\n");
  }
  nlohmann::json rows = nlohmann::json::array();
  if (o.format == "table") {
    std::printf("job %s  %s  %s ws=%d  state=%s\n", job->id.c_str(), job->problem.c_str(),
                job->backend.c_str(), job->world_size,
                std::string(storage::JobStateName(job->state)).c_str());
    std::printf("%9s %9s %-15s %9s %9s %9s %9s  %-12s %s\n", "ELAPSED_S", "ACTIVE_S", "STATUS",
                "SPEEDUP", "BEST", "QUEUE_MS", "RUN_MS", "CANDIDATE", "KIND");
  }
  // traj.points holds the search evaluations (not the final measurement) in
  // this order; BEST is over those at the job's own settings only.
  size_t point = 0;
  storage::EvalPoint last_point;
  int others = 0;
  for (size_t i = 0; i < evals->size(); ++i) {
    const auto& e = (*evals)[i];
    const bool final_measurement = e.role == storage::kRoleFinal;
    if (!final_measurement && point < traj.points.size()) last_point = traj.points[point++];
    storage::EvalPoint p = last_point;
    if (final_measurement) p.elapsed_s = static_cast<double>(e.elapsed_ms) / 1e3;
    others += !final_measurement && !e.comparable;
    const std::string kind = final_measurement ? "final"
                             : e.comparable    ? "search"
                                               : fmt::format("other:{}it", e.timed_iters);
    if (e.correct && e.speedup && e.comparable && !final_measurement && *e.speedup > best) {
      best = *e.speedup;
    }
    std::optional<double> best_opt = best > 0 ? std::optional<double>(best) : std::nullopt;
    if (o.format == "csv") {
      std::printf("%s,%.3f,%.3f,%s,%d,%s,%s,%.1f,%.1f,%.1f,%s,%d,%s\n", e.id.c_str(),
                  p.elapsed_s, p.active_s, e.status.c_str(), e.correct ? 1 : 0,
                  e.speedup ? Fmt(e.speedup, "%.6g").c_str() : "",
                  best_opt ? Fmt(best_opt, "%.6g").c_str() : "", e.queue_ms, e.compile_ms, e.run_ms,
                  e.candidate_sha256.c_str(), e.timed_iters,
                  final_measurement ? "final" : e.comparable ? "search" : "other_settings");
    } else if (o.format == "json") {
      nlohmann::json r = {{"evaluation_id", e.id},
                          {"elapsed_s", p.elapsed_s},
                          {"active_s", p.active_s},
                          {"status", e.status},
                          {"correct", e.correct},
                          {"queue_ms", e.queue_ms},
                          {"compile_ms", e.compile_ms},
                          {"run_ms", e.run_ms},
                          {"candidate_sha256", e.candidate_sha256},
                          {"timed_iters", e.timed_iters},
                          {"trials", e.trials},
                          {"other_settings", !e.comparable},
                          {"final_measurement", final_measurement}};
      r["speedup"] = e.speedup ? nlohmann::json(*e.speedup) : nlohmann::json();
      r["best_so_far"] = best_opt ? nlohmann::json(*best_opt) : nlohmann::json();
      rows.push_back(r);
    } else {
      std::printf("%9.2f %9.2f %-15s %9s %9s %9.1f %9.1f  %-12.12s %s\n", p.elapsed_s,
                  p.active_s, e.status.c_str(), Fmt(e.speedup).c_str(), Fmt(best_opt).c_str(),
                  e.queue_ms, e.run_ms, e.candidate_sha256.c_str(), kind.c_str());
    }
  }
  if (o.format == "table" && others > 0) {
    std::printf("note: %d evaluation(s) of kind other:<N>it ran at other settings than the job's "
                "(successive-halving rungs timed with N iterations): not comparable, not in BEST\n",
                others);
  }
  if (o.format == "json") {
    nlohmann::json out = {{"job_id", job->id}, {"problem", job->problem}, {"evaluations", rows}};
    std::printf("%s\n", DumpJson(out).c_str());
  }
  return kExitOk;
}

// --------------------------------------------------------------- plateau --

struct PlateauCliOptions {
  std::string db;
  RemoteOptions remote;
  FilterOptions filter;
  std::vector<std::string> job_ids;
  double epsilon = 0.01;
  double window_s = 0;
  std::string axis = "elapsed";
  std::string group_by = "agent_kind,model,strategy";
  std::string fast_p = "0,1,1.5,2";
  std::string budgets;
  std::string svg, csv, curves_csv;
  std::string svg_mode = "groups";
  bool log_x = false;
  std::string output = "table";
};

absl::StatusOr<std::vector<double>> ParseDoubles(const std::string& text, const char* flag) {
  std::vector<double> out;
  if (text.empty()) return out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::string s(part);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end == s.c_str() || *end != '\0' || !std::isfinite(v)) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": '", s, "' is not a number"));
    }
    out.push_back(v);
  }
  return out;
}

// Without --db: the orchestrator computes the report (AnalyzePlateau).
int RunRemotePlateau(const PlateauCliOptions& o) {
  if (!o.csv.empty() || !o.curves_csv.empty() || o.output == "csv") {
    return ReportStatus("plateau", absl::InvalidArgumentError(
                                       "--csv, --curves-csv and -o csv need --db (or use -o json)"));
  }
  auto remote = Remote::Connect(o.remote);
  if (!remote.ok()) return ReportStatus("plateau", remote.status());
  v1::AnalyzePlateauRequest req;
  auto* sel = req.mutable_jobs();
  for (const auto& id : o.job_ids) sel->add_job_ids(id);
  sel->set_problem(o.filter.problem);
  sel->set_model(o.filter.model);
  sel->set_strategy(o.filter.strategy);
  sel->set_agent_kind(o.filter.agent);
  sel->set_label(o.filter.label);
  req.set_epsilon(o.epsilon);
  req.set_window_s(o.window_s);
  if (o.axis != "elapsed" && o.axis != "active") {
    return ReportStatus("plateau", absl::InvalidArgumentError("--axis: expected elapsed or active"));
  }
  req.set_axis(o.axis == "active" ? v1::TIME_AXIS_ACTIVE : v1::TIME_AXIS_ELAPSED);
  if (!o.group_by.empty() && o.group_by != "none") {
    for (absl::string_view k : absl::StrSplit(o.group_by, ',')) req.add_group_by(std::string(k));
  }
  auto ps = ParseDoubles(o.fast_p, "--fast-p");
  if (!ps.ok()) return ReportStatus("plateau", ps.status());
  for (double p : *ps) req.add_fast_p(p);
  auto budgets = ParseDoubles(o.budgets, "--budgets");
  if (!budgets.ok()) return ReportStatus("plateau", budgets.status());
  for (double b : *budgets) req.add_budgets_s(b);
  req.set_include_svg(!o.svg.empty());
  req.set_include_curves(o.output == "json");
  v1::PlateauReport report;
  auto ctx = remote->Context(120);
  grpc::Status st = remote->stub()->AnalyzePlateau(ctx.get(), req, &report);
  if (!st.ok()) return ReportStatus("plateau", RemoteError(*remote, st));
  if (!o.svg.empty()) {
    std::ofstream out(o.svg, std::ios::binary | std::ios::trunc);
    out << report.svg();
    if (!out) return ReportStatus("plateau", absl::UnavailableError("writing " + o.svg + " failed"));
    report.clear_svg();
  }
  if (o.output == "json") {
    std::printf("%s\n", ToJsonText(report).c_str());
    return kExitOk;
  }
  auto opt = [](bool has, double v, const char* fmt = "%.3f") {
    return has ? Fmt(std::optional<double>(v), fmt) : std::string("-");
  };
  std::printf("%-31s %-16s %-16s %8s %10s %10s %10s\n", "JOB", "PROBLEM", "MODEL", "FINAL",
              "FIRST_OK_S", "ONSET_S", "DURATION_S");
  for (const auto& j : report.jobs()) {
    std::printf("%-31s %-16s %-16s %8s %10s %10s %10.1f\n", j.job_id().c_str(),
                j.problem().c_str(), j.model().empty() ? "-" : j.model().c_str(),
                opt(j.has_final_best(), j.final_best()).c_str(),
                opt(j.has_first_correct_s(), j.first_correct_s(), "%.1f").c_str(),
                opt(j.has_plateau_onset_s(), j.plateau_onset_s(), "%.1f").c_str(), j.duration_s());
  }
  for (const auto& j : report.jobs()) {
    if (j.other_settings_evaluations() == 0) continue;
    std::printf("note: %s: %d evaluation(s) at other settings (search rungs, best %s) are not in "
                "these figures\n",
                j.job_id().c_str(), j.other_settings_evaluations(),
                opt(j.has_other_settings_best(), j.other_settings_best()).c_str());
  }
  for (const auto& j : report.jobs()) {
    if (!j.has_best_multi_size_score()) continue;
    std::printf("multi-size: %s: best multi-size score %.3fx (geometric mean over the size ladder)\n",
                j.job_id().c_str(), j.best_multi_size_score());
  }
  std::printf("\n%-40s %5s %8s %12s %12s %12s\n", "GROUP", "JOBS", "CORRECT", "MEDIAN_BEST",
              "MEDIAN_ONSET", "MEDIAN_1ST");
  for (const auto& g : report.groups()) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : g.key()) parts.push_back(v.empty() ? "(none)" : v);
    std::string name = parts.empty() ? "all" : absl::StrJoin(parts, " / ");
    std::printf("%-40s %5d %7.0f%% %12s %12s %12s\n", name.c_str(), g.jobs(),
                100 * g.share_correct(),
                opt(g.has_median_final_best(), g.median_final_best()).c_str(),
                opt(g.has_median_onset_s(), g.median_onset_s(), "%.1f").c_str(),
                opt(g.has_median_first_correct_s(), g.median_first_correct_s(), "%.1f").c_str());
  }
  for (const auto& t : report.truncation()) {
    std::printf("budget %.1fs: %.0f%% of %d correct, median best %s, geomean %s\n", t.budget_s(),
                100 * t.share_correct(), t.jobs(), opt(t.has_median_best(), t.median_best()).c_str(),
                opt(t.has_geomean_best(), t.geomean_best()).c_str());
  }
  return kExitOk;
}

int RunPlateau(const PlateauCliOptions& o) {
  if (o.db.empty()) return RunRemotePlateau(o);
  auto store = OpenDb(o.db);
  if (!store.ok()) return ReportStatus("plateau", store.status());
  storage::PlateauOptions opts;
  auto axis = storage::ParseTimeAxis(o.axis);
  if (!axis.ok()) return ReportStatus("plateau", axis.status());
  opts.axis = *axis;
  opts.onset.epsilon = o.epsilon;
  if (o.window_s > 0) opts.onset.window_s = o.window_s;
  opts.group_by.clear();
  if (!o.group_by.empty() && o.group_by != "none") {
    for (absl::string_view k : absl::StrSplit(o.group_by, ',')) {
      auto key = storage::ParseGroupKey(AsStd(k));
      if (!key.ok()) return ReportStatus("plateau", Annotate(key.status(), "--group-by"));
      opts.group_by.push_back(*key);
    }
  }
  auto ps = ParseDoubles(o.fast_p, "--fast-p");
  if (!ps.ok()) return ReportStatus("plateau", ps.status());
  opts.fast_p = *ps;
  auto budgets = ParseDoubles(o.budgets, "--budgets");
  if (!budgets.ok()) return ReportStatus("plateau", budgets.status());
  opts.budgets_s = *budgets;

  std::vector<storage::JobTrajectory> trajectories;
  if (!o.job_ids.empty()) {
    for (const auto& id : o.job_ids) {
      auto t = storage::LoadJobTrajectory(**store, id);
      if (!t.ok()) return ReportStatus("plateau", t.status());
      trajectories.push_back(std::move(*t));
    }
  } else {
    auto t = storage::LoadJobTrajectories(**store, o.filter.ToFilter());
    if (!t.ok()) return ReportStatus("plateau", t.status());
    trajectories = std::move(*t);
  }
  if (trajectories.empty()) {
    return ReportStatus("plateau", absl::NotFoundError("no jobs match the filters"));
  }
  auto report = storage::BuildPlateauReport(trajectories, opts);
  if (!report.ok()) return ReportStatus("plateau", report.status());

  auto write_file = [](const std::string& path, const std::string& text) -> absl::Status {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return absl::UnavailableError(absl::StrCat("writing ", path, " failed"));
    return absl::OkStatus();
  };
  if (!o.svg.empty()) {
    storage::SvgOptions svg_opts;
    svg_opts.mode = o.svg_mode == "jobs" ? storage::SvgMode::kJobs : storage::SvgMode::kGroups;
    svg_opts.log_x = o.log_x;
    auto svg = storage::RenderPlateauSvg(*report, svg_opts);
    if (!svg.ok()) return ReportStatus("plateau", svg.status());
    if (auto s = write_file(o.svg, *svg); !s.ok()) return ReportStatus("plateau", s);
  }
  if (!o.csv.empty()) {
    if (auto s = write_file(o.csv, storage::JobSummaryCsv(*report)); !s.ok()) {
      return ReportStatus("plateau", s);
    }
  }
  if (!o.curves_csv.empty()) {
    if (auto s = write_file(o.curves_csv, storage::CurveCsv(*report)); !s.ok()) {
      return ReportStatus("plateau", s);
    }
  }
  if (o.output == "csv") {
    std::printf("%s", storage::JobSummaryCsv(*report).c_str());
    return kExitOk;
  }
  if (o.output == "json") {
    auto json = storage::ReportToJson(*report);
    if (!json.ok()) return ReportStatus("plateau", json.status());
    std::printf("%s\n", json->c_str());
    return kExitOk;
  }
  std::printf("%-31s %-16s %-16s %8s %10s %10s %10s\n", "JOB", "PROBLEM", "MODEL", "FINAL",
              "FIRST_OK_S", "ONSET_S", "DURATION_S");
  for (const auto& j : report->jobs) {
    std::printf("%-31s %-16s %-16s %8s %10s %10s %10.1f\n", j.job_id.c_str(), j.problem.c_str(),
                j.model.empty() ? "-" : j.model.c_str(), Fmt(j.final_best).c_str(),
                Fmt(j.first_correct_s, "%.1f").c_str(), Fmt(j.plateau_onset_s, "%.1f").c_str(),
                j.curve.end_s);
  }
  for (const auto& j : report->jobs) {
    if (j.curve.other_evaluations == 0) continue;
    std::printf("note: %s: %d evaluation(s) at other settings (search rungs, best %s) are not in "
                "these figures\n",
                j.job_id.c_str(), j.curve.other_evaluations, Fmt(j.curve.other_best).c_str());
  }
  for (const auto& j : report->jobs) {
    if (!j.best_multi_size_score) continue;
    std::printf("multi-size: %s: best multi-size score %.3fx (geometric mean over the size ladder)\n",
                j.job_id.c_str(), *j.best_multi_size_score);
  }
  std::printf("\n%-40s %5s %8s %12s %12s %12s\n", "GROUP", "JOBS", "CORRECT", "MEDIAN_BEST",
              "MEDIAN_ONSET", "MEDIAN_1ST");
  for (const auto& g : report->groups) {
    std::printf("%-40s %5d %7.0f%% %12s %12s %12s\n", g.name.c_str(), g.jobs, 100 * g.share_correct,
                Fmt(g.median_final_best).c_str(), Fmt(g.median_plateau_onset_s, "%.1f").c_str(),
                Fmt(g.median_first_correct_s, "%.1f").c_str());
  }
  for (const auto& t : report->truncation) {
    std::printf("budget %.1fs: %d/%d correct, median best %s, geomean %s\n", t.budget_s,
                t.jobs_correct, t.jobs, Fmt(t.median_best).c_str(), Fmt(t.geomean_best).c_str());
  }
  return kExitOk;
}

}  // namespace

void RegisterAnalysis(CLI::App& app, int* exit_code) {
  {
    auto o = std::make_shared<JobsOptions>();
    CLI::App* cmd = app.add_subcommand("jobs", "List jobs");
    cmd->add_option("--db", o->db, "Trajectory database file (offline, no server)");
    o->remote.Add(cmd);
    o->filter.Add(cmd);
    AddOutputOption(cmd, &o->output);
    cmd->callback([o, exit_code] { *exit_code = RunJobs(*o); });
  }
  {
    auto o = std::make_shared<TrajectoryOptions>();
    CLI::App* cmd = app.add_subcommand("trajectory", "Every evaluation of a job, in time order");
    cmd->add_option("job", o->job_id, "Job id")->required();
    cmd->add_option("--db", o->db, "Trajectory database file (offline, no server)");
    o->remote.Add(cmd);
    AddOutputOption(cmd, &o->format, {"table", "json", "csv"}, "--format");
    cmd->callback([o, exit_code] { *exit_code = RunTrajectory(*o); });
  }
  {
    auto o = std::make_shared<PlateauCliOptions>();
    CLI::App* cmd = app.add_subcommand(
        "plateau", "Best-so-far curves, plateau onset, fast_p and budget truncation");
    cmd->add_option("--db", o->db, "Trajectory database file (offline, no server)");
    o->remote.Add(cmd);
    o->filter.Add(cmd);
    cmd->add_option("--job", o->job_ids, "Analyse these jobs (repeatable) instead of filters");
    cmd->add_option("--epsilon", o->epsilon, "Relative improvement below which it is a plateau")
        ->check(CLI::Range(0.0, 10.0))
        ->capture_default_str();
    cmd->add_option("--window", o->window_s, "Plateau window in seconds (0: rest of the run)")
        ->check(CLI::Range(0.0, 1e9));
    cmd->add_option("--axis", o->axis, "elapsed | active (excludes executor queue time)")
        ->capture_default_str();
    cmd->add_option("--group-by", o->group_by,
                    "Comma list of model,strategy,problem,agent_kind,label, or none")
        ->capture_default_str();
    cmd->add_option("--fast-p", o->fast_p, "Comma list of speedup thresholds p")
        ->capture_default_str();
    cmd->add_option("--budgets", o->budgets, "Comma list of budgets (s) for truncation");
    cmd->add_option("--svg", o->svg, "Write an SVG plot of best-so-far curves here");
    cmd->add_option("--svg-mode", o->svg_mode, "groups (median + 10-90% band) | jobs")
        ->check(CLI::IsMember({"groups", "jobs"}))
        ->capture_default_str();
    cmd->add_flag("--log-x", o->log_x, "Logarithmic time axis in the SVG");
    cmd->add_option("--csv", o->csv, "Write per-job summaries as CSV here");
    cmd->add_option("--curves-csv", o->curves_csv, "Write best-so-far curves (long format) here");
    AddOutputOption(cmd, &o->output);  // csv: the per-job summaries (as --csv FILE)
    cmd->callback([o, exit_code] { *exit_code = RunPlateau(*o); });
  }
}

}  // namespace pkforge::cli
