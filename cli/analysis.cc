// Offline analysis commands that read a trajectory database directly, with no
// server running (researchers analyse finished runs): `pkforge jobs --db`,
// `pkforge trajectory JOB --db`, `pkforge plateau --db`. The same commands will
// talk to a running orchestrator once it exists (issue #7); until then --db is
// required and its absence is a usage error that says so.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "storage/plateau.h"
#include "storage/plateau_export.h"
#include "storage/plateau_loader.h"
#include "storage/store.h"

namespace pkforge::cli {
namespace {

using storage::JobFilter;
using storage::TrajectoryStore;

absl::StatusOr<std::unique_ptr<TrajectoryStore>> OpenDb(const std::string& db) {
  if (db.empty()) {
    return absl::InvalidArgumentError(
        "--db PATH is required (talking to a running orchestrator arrives with issue #7)");
  }
  // Opening migrates an older schema; a missing file must not be created by a
  // read-only command, so check first.
  std::ifstream probe(db);
  if (!probe.good()) return absl::NotFoundError(absl::StrCat("database ", db, " does not exist"));
  auto store = TrajectoryStore::Open(db);
  if (!store.ok()) return Annotate(store.status(), "opening " + db);
  return store;
}

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
  FilterOptions filter;
  bool json = false;
};

int RunJobs(const JobsOptions& o) {
  auto store = OpenDb(o.db);
  if (!store.ok()) return ReportStatus("jobs", store.status());
  auto jobs = (*store)->ListJobs(o.filter.ToFilter());
  if (!jobs.ok()) return ReportStatus("jobs", jobs.status());
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& j : *jobs) {
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
      out.push_back(row);
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%-31s %-11s %-18s %-7s %-3s %-7s %-20s %-10s %8s\n", "JOB", "STATE", "PROBLEM",
              "BACKEND", "WS", "AGENT", "MODEL", "STRATEGY", "BEST");
  for (const auto& j : *jobs) {
    std::printf("%-31s %-11s %-18s %-7s %-3d %-7s %-20s %-10s %8s\n", j.id.c_str(),
                std::string(storage::JobStateName(j.state)).c_str(), j.problem.c_str(),
                j.backend.c_str(), j.world_size, j.agent_kind.c_str(),
                j.model.empty() ? "-" : j.model.c_str(), j.strategy.c_str(),
                j.best_speedup ? (Fmt(j.best_speedup, "%.3f") + "x").c_str() : "-");
  }
  std::printf("%zu job(s)\n", jobs->size());
  return kExitOk;
}

// ------------------------------------------------------------ trajectory --

struct TrajectoryOptions {
  std::string db;
  std::string job_id;
  std::string format = "table";
};

int RunTrajectory(const TrajectoryOptions& o) {
  auto store = OpenDb(o.db);
  if (!store.ok()) return ReportStatus("trajectory", store.status());
  auto job = (*store)->GetJob(o.job_id);
  if (!job.ok()) return ReportStatus("trajectory", job.status());
  auto evals = (*store)->ListEvaluations(o.job_id);
  if (!evals.ok()) return ReportStatus("trajectory", evals.status());
  storage::JobTrajectory traj =
      storage::TrajectoryFromRecords(*job, *evals, SystemClock::Get()->NowWallMicros());
  // best-so-far alongside each evaluation, in elapsed order.
  double best = 0;
  if (o.format == "csv") {
    std::printf(
        "evaluation_id,elapsed_s,active_s,status,correct,speedup,best_so_far,queue_ms,"
        "compile_ms,run_ms,candidate_sha256\n");
  }
  nlohmann::json rows = nlohmann::json::array();
  if (o.format == "table") {
    std::printf("job %s  %s  %s ws=%d  state=%s\n", job->id.c_str(), job->problem.c_str(),
                job->backend.c_str(), job->world_size,
                std::string(storage::JobStateName(job->state)).c_str());
    std::printf("%9s %9s %-15s %9s %9s %9s %9s  %s\n", "ELAPSED_S", "ACTIVE_S", "STATUS", "SPEEDUP",
                "BEST", "QUEUE_MS", "RUN_MS", "CANDIDATE");
  }
  for (size_t i = 0; i < evals->size(); ++i) {
    const auto& e = (*evals)[i];
    const auto& p = traj.points[i];
    if (e.correct && e.speedup && *e.speedup > best) best = *e.speedup;
    std::optional<double> best_opt = best > 0 ? std::optional<double>(best) : std::nullopt;
    if (o.format == "csv") {
      std::printf("%s,%.3f,%.3f,%s,%d,%s,%s,%.1f,%.1f,%.1f,%s\n", e.id.c_str(), p.elapsed_s,
                  p.active_s, e.status.c_str(), e.correct ? 1 : 0,
                  e.speedup ? Fmt(e.speedup, "%.6g").c_str() : "",
                  best_opt ? Fmt(best_opt, "%.6g").c_str() : "", e.queue_ms, e.compile_ms, e.run_ms,
                  e.candidate_sha256.c_str());
    } else if (o.format == "json") {
      nlohmann::json r = {{"evaluation_id", e.id},
                          {"elapsed_s", p.elapsed_s},
                          {"active_s", p.active_s},
                          {"status", e.status},
                          {"correct", e.correct},
                          {"queue_ms", e.queue_ms},
                          {"compile_ms", e.compile_ms},
                          {"run_ms", e.run_ms},
                          {"candidate_sha256", e.candidate_sha256}};
      r["speedup"] = e.speedup ? nlohmann::json(*e.speedup) : nlohmann::json();
      r["best_so_far"] = best_opt ? nlohmann::json(*best_opt) : nlohmann::json();
      rows.push_back(r);
    } else {
      std::printf("%9.2f %9.2f %-15s %9s %9s %9.1f %9.1f  %.12s\n", p.elapsed_s, p.active_s,
                  e.status.c_str(), Fmt(e.speedup).c_str(), Fmt(best_opt).c_str(), e.queue_ms,
                  e.run_ms, e.candidate_sha256.c_str());
    }
  }
  if (o.format == "json") {
    nlohmann::json out = {{"job_id", job->id}, {"problem", job->problem}, {"evaluations", rows}};
    std::printf("%s\n", out.dump(2).c_str());
  }
  return kExitOk;
}

// --------------------------------------------------------------- plateau --

struct PlateauCliOptions {
  std::string db;
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
  bool json = false;
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

int RunPlateau(const PlateauCliOptions& o) {
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
  if (o.json) {
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
    o->filter.Add(cmd);
    cmd->add_flag("--json", o->json, "JSON output");
    cmd->callback([o, exit_code] { *exit_code = RunJobs(*o); });
  }
  {
    auto o = std::make_shared<TrajectoryOptions>();
    CLI::App* cmd = app.add_subcommand("trajectory", "Every evaluation of a job, in time order");
    cmd->add_option("job", o->job_id, "Job id")->required();
    cmd->add_option("--db", o->db, "Trajectory database file (offline, no server)");
    cmd->add_option("--format", o->format, "table | json | csv")
        ->check(CLI::IsMember({"table", "json", "csv"}))
        ->capture_default_str();
    cmd->callback([o, exit_code] { *exit_code = RunTrajectory(*o); });
  }
  {
    auto o = std::make_shared<PlateauCliOptions>();
    CLI::App* cmd = app.add_subcommand(
        "plateau", "Best-so-far curves, plateau onset, fast_p and budget truncation");
    cmd->add_option("--db", o->db, "Trajectory database file (offline, no server)");
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
    cmd->add_flag("--json", o->json, "Print the full report as JSON");
    cmd->callback([o, exit_code] { *exit_code = RunPlateau(*o); });
  }
}

}  // namespace pkforge::cli
