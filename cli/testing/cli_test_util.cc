#include "cli/testing/cli_test_util.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

#include "common/status.h"
#include "fmt/format.h"

namespace pkforge::cli::test_util {

Cmd Shell(const std::string& command) {
  Cmd r;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

absl::StatusOr<Daemons> StartDaemons(const DaemonOptions& o) {
  executor::ExecutorConfig c;
  c.listen = "127.0.0.1:0";
  c.data_dir = o.dir + "/executor";
  c.gpus = "none";
  c.nvcc = "none";
  c.measure_ceilings = false;
  c.host_slots = 1;
  c.default_timeout_s = o.executor_timeout_s;
  c.worker_path = o.bin_dir + "/pkforge-worker";
  c.max_file_mb = 64;
  c.tmpfs_mb = 128;
  c.run_memory_mb = 4096;
  if (o.configure_executor) o.configure_executor(&c);
  RETURN_IF_ERROR(Annotate(executor::Finalize(&c, o.bin_dir + "/pkforge-executor"),
                           "executor config"));
  Daemons d;
  ASSIGN_OR_RETURN(d.executor, executor::ExecutorServer::Start(c));
  std::vector<std::string> argv = {o.orchestrator_bin,
                                   "--executor",
                                   d.executor->address(),
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--db",
                                   o.db.empty() ? o.dir + "/traj.db" : o.db};
  argv.insert(argv.end(), o.orchestrator_args.begin(), o.orchestrator_args.end());
  ASSIGN_OR_RETURN(d.orchestrator, orchestrator::testing::ChildProcess::Start(
                                       std::move(argv), 30, o.dir + "/orchestrator.log"));
  return d;
}

absl::Status MakeReadOnly(const std::string& file) {
  const std::string folder = std::filesystem::path(file).parent_path().string();
  if (chmod(file.c_str(), 0444) != 0 || chmod(folder.c_str(), 0555) != 0) {
    return absl::InternalError(fmt::format("chmod {}: {}", file, std::strerror(errno)));
  }
  return absl::OkStatus();
}

void MakeWritable(const std::string& file) {
  const std::string folder = std::filesystem::path(file).parent_path().string();
  chmod(folder.c_str(), 0755);
  chmod(file.c_str(), 0644);
}

}  // namespace pkforge::cli::test_util
