// `pkforge report JOB -o job.html [--db FILE]`: the job's HTML report
// (cli/report.h) from the orchestrator (GetTrajectory with sources, LLM text
// and results) or, with --db, from the database file opened read-only.
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/remote.h"
#include "cli/report.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"

namespace pkforge::cli {
namespace {

absl::StatusOr<v1::Trajectory> FetchForReport(const RemoteOptions& ro, const std::string& job_id,
                                              const std::string& db) {
  if (!db.empty()) return LoadReportTrajectory(db, job_id);
  RETURN_IF_ERROR(Annotate(ValidateId(job_id, "job"), "job"));
  ASSIGN_OR_RETURN(Remote remote, Remote::Connect(ro));
  v1::GetTrajectoryRequest req;
  req.set_job_id(job_id);
  req.set_include_sources(true);
  req.set_include_llm_text(true);
  req.set_include_results(true);
  v1::Trajectory traj;
  // A long job's trajectory (sources, replies, results) can be large.
  auto ctx = remote.Context(120);
  grpc::Status st = remote.stub()->GetTrajectory(ctx.get(), req, &traj);
  if (!st.ok()) return RemoteError(remote, st);
  return traj;
}

int RunReport(const RemoteOptions& ro, const std::string& job_id, const std::string& out,
              const std::string& db) {
  if (out.empty()) {
    return ReportStatus("report", absl::InvalidArgumentError("-o FILE is required"));
  }
  absl::StatusOr<v1::Trajectory> traj = FetchForReport(ro, job_id, db);
  if (!traj.ok()) return ReportStatus("report", traj.status());
  ReportOptions options;
  options.generated_by = db.empty() ? "pkforge report" : "pkforge report --db " + db;
  options.generated_wall_us = SystemClock::Get()->NowWallMicros();
  absl::StatusOr<std::string> html = RenderJobReport(*traj, options);
  if (!html.ok()) return ReportStatus("report", html.status());
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f << *html;
  f.close();
  if (!f) return ReportStatus("report", absl::UnavailableError(absl::StrCat("-o ", out, ": cannot write")));
  std::printf("%s\n", out.c_str());
  return kExitOk;
}

}  // namespace

void RegisterReport(CLI::App& app, int* exit_code) {
  auto ro = std::make_shared<RemoteOptions>();
  auto job = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto db = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Write one self-contained HTML report of a job (plots, every evaluation, diffs)");
  cmd->add_option("job", *job, "Job id")->required();
  ro->Add(cmd);
  cmd->add_option("-o,--output", *out, "HTML file to write")->required();
  cmd->add_option("--db", *db, "Trajectory database file (offline, no server, read-only)");
  cmd->callback([=] { *exit_code = RunReport(*ro, *job, *out, *db); });
}

}  // namespace pkforge::cli
