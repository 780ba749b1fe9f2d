// Test support shared by the CLI's tests (a second, test-only target
// pkforge::cli_testing, namespace pkforge::cli::test_util): running a command line, the two daemons on
// loopback with the host backend, and a database file made read-only the way
// a researcher's archived copy is. One copy each instead of one per test file.
//
// Threading: plain functions; Daemons is owned by one test.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "executor/config.h"
#include "executor/server.h"
#include "orchestrator/testing/test_util.h"

namespace pkforge::cli::test_util {

struct Cmd {
  int rc = -1;       // exit status, 128 + signal when killed
  std::string out;   // stdout (add 2>&1 to the command for both)
};

// Runs `command` with /bin/sh and waits for it.
Cmd Shell(const std::string& command);

// A real executor in this process (host backend, no GPU, no nvcc, a fixed
// host memory ceiling instead of measuring it) and the real orchestrator
// binary as a child process pointing at it, both on 127.0.0.1.
struct DaemonOptions {
  std::string dir;               // executor data (dir/executor), orchestrator log
  std::string db;                // the orchestrator's --db; "" = dir/traj.db
  std::string orchestrator_bin;  // PKFORGE_ORCH_BIN
  std::string bin_dir;           // PKFORGE_BIN_DIR: pkforge-worker, pkforge-executor
  double executor_timeout_s = 30;
  // More orchestrator flags (TLS, tokens, intervals) after --executor,
  // --listen and --db.
  std::vector<std::string> orchestrator_args = {"--heartbeat-interval", "0.2",
                                                "--health-interval", "0.3"};
  // Changes to the executor's config before it starts (TLS, tokens).
  std::function<void(executor::ExecutorConfig*)> configure_executor;
};
struct Daemons {
  std::unique_ptr<executor::ExecutorServer> executor;
  std::unique_ptr<orchestrator::testing::ChildProcess> orchestrator;
};
absl::StatusOr<Daemons> StartDaemons(const DaemonOptions& options);

// `chmod 0444 file` in a `chmod 0555` folder: what --db and read_db must read
// without writing anything. MakeWritable undoes it (for clean-up).
absl::Status MakeReadOnly(const std::string& file);
void MakeWritable(const std::string& file);

}  // namespace pkforge::cli::test_util
