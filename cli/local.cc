// `pkforge local`: the main job on one machine with embedded defaults.
//
// Today this prepares the data directory and the trajectory database (the
// parts that exist) and reports that the orchestrator is not available yet;
// the full job (executor + orchestrator children on loopback) arrives with the
// orchestrator issue. It never pretends to have run a job.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "common/status.h"
#include "storage/store.h"

namespace pkforge::cli {
namespace {

struct LocalOptions {
  std::string problem = "allreduce";
  std::string budget = "10m";
  std::string agent;    // llm | search | replay; empty = llm if configured, else search
  std::string backend;  // host | cuda; empty = cuda if a GPU is usable, else host
  int world_size = 1;
  std::string data_dir = "pkforge-data";
  bool json = false;
};

bool GpuUsable() {
  return access("/dev/nvidiactl", F_OK) == 0 && access("/dev/nvidia0", F_OK) == 0;
}

int RunLocal(const LocalOptions& o) {
  std::error_code ec;
  std::filesystem::create_directories(o.data_dir, ec);
  if (ec) {
    return ReportStatus("local", absl::UnavailableError(absl::StrCat(
                                     "creating data directory ", o.data_dir, ": ", ec.message())));
  }
  std::string db_path = (std::filesystem::path(o.data_dir) / "pkforge.db").string();
  auto store = storage::TrajectoryStore::Open(db_path);
  if (!store.ok()) return ReportStatus("local", Annotate(store.status(), "opening " + db_path));
  auto version = (*store)->SchemaVersion();
  if (!version.ok()) return ReportStatus("local", version.status());

  std::string backend = o.backend.empty() ? (GpuUsable() ? "cuda" : "host") : o.backend;
  std::printf("pkforge local: data directory %s, trajectory database %s (schema v%d)\n",
              o.data_dir.c_str(), db_path.c_str(), *version);
  std::printf("pkforge local: backend %s (%s)\n", backend.c_str(),
              o.backend.empty() ? (backend == "cuda" ? "GPU found" : "no usable GPU found")
                                : "as requested");
  return ReportStatus(
      "local",
      absl::UnavailableError("not yet available: running a job needs the executor and orchestrator "
                             "daemons, which are not built yet (issues #5 and #7). The build, the "
                             "trajectory store and the offline analysis commands (`pkforge plateau "
                             "--db`, `pkforge jobs --db`) work now."));
}

}  // namespace

void RegisterLocal(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<LocalOptions>();
  CLI::App* cmd = app.add_subcommand("local", "Run an optimization job on this machine");
  cmd->add_option("--problem", opts->problem, "Problem name")->capture_default_str();
  cmd->add_option("--budget", opts->budget, "Wall-clock budget, e.g. 90s, 10m, 1h")
      ->capture_default_str();
  cmd->add_option("--agent", opts->agent, "llm | search | replay")
      ->check(CLI::IsMember({"llm", "search", "replay"}));
  cmd->add_option("--backend", opts->backend, "host | cuda (default: cuda when a GPU is usable)")
      ->check(CLI::IsMember({"host", "cuda"}));
  cmd->add_option("--world-size", opts->world_size, "Ranks")->check(CLI::Range(1, 64));
  cmd->add_option("--data-dir", opts->data_dir, "Where the database and sources go")
      ->capture_default_str();
  cmd->add_flag("--json", opts->json, "Print the result as JSON");
  cmd->callback([opts, exit_code] { *exit_code = RunLocal(*opts); });
}

}  // namespace pkforge::cli
