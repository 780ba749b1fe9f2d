// pkforge-sandbox: run one command under the pkforge sandbox (for operators
// and tests).
//
//   pkforge-sandbox [--scratch DIR] [--timeout SECONDS] [--cpu-seconds N]
//                   [--max-file-mb N] [--max-procs N] [--max-output-kb N]
//                   [--ro PATH]... [--rw PATH]... [--gpu | --gpus 0,2]
//                   [--env NAME=VALUE]...
//                   -- COMMAND [ARGS...]
//
// Passes the command's stdout/stderr through as they arrive (capped) and
// exits with the command's status; 124 when the wall-clock deadline killed
// it; 128+N when signal N did; 125 when the sandbox could not be set up (the
// message says what); 126/127 when the command cannot be executed / found
// inside the sandbox (the GNU timeout(1) conventions).
#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "common/version.h"
#include "common/status.h"
#include "sandbox/sandbox.h"

namespace {

using pkforge::sandbox::CgroupMode;
using pkforge::sandbox::OutputStream;
using pkforge::sandbox::Sandbox;
using pkforge::sandbox::SandboxConfig;
using pkforge::sandbox::SandboxPolicy;

constexpr int kExitSetupFailure = 125;

// The one config struct of this binary, with in-class defaults.
struct CliConfig {
  std::string scratch;  // empty: a fresh temporary directory, removed after
  bool scratch_read_only = false;  // --scratch-read-only
  double timeout_s = 60;
  int64_t cpu_seconds = 600;
  int64_t max_file_mb = 1024;
  int64_t max_procs = 512;
  int64_t max_output_kb = 1024;
  int64_t max_open_files = 1024;
  int64_t memory_mb = 8192;
  std::vector<std::string> ro;
  std::vector<std::string> rw;
  std::vector<std::string> env;
  bool gpu = false;
  std::string gpus;  // "0,2": only these GPUs (implies --gpu)
  bool unsafe_no_sandbox = false;
  std::string bwrap;
  std::string cgroup = "auto";
  int64_t run_as_uid = -1;
  int64_t run_as_gid = -1;
  std::string log_level = "warn";
  std::vector<std::string> command;
};

void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // our reader went away; keep draining the sandbox
    data.remove_prefix(static_cast<size_t>(n));
  }
}

int Fail(int code, std::string_view message) {
  std::fprintf(stderr, "pkforge-sandbox: %.*s\n", static_cast<int>(message.size()), message.data());
  return code;
}

}  // namespace

// Long (~175 lines) because it is mostly the flat list of flags, each mapped
// onto one SandboxPolicy field next to its help text; the run itself is a
// dozen lines at the end.
int main(int argc, char** argv) {
  CliConfig cfg;
  CLI::App app{"Run COMMAND inside the pkforge sandbox (see sandbox/README.md)."};
  app.set_version_flag("--version", "pkforge-sandbox " + pkforge::VersionString());
  app.add_option("--scratch", cfg.scratch,
                 "Writable working directory bound into the sandbox (default: a fresh "
                 "temporary directory, deleted afterwards)");
  app.add_flag("--scratch-read-only", cfg.scratch_read_only,
               "Bind the scratch directory read-only and work in the private /tmp");
  app.add_option("--timeout", cfg.timeout_s, "Wall-clock deadline in seconds (0: none)")
      ->capture_default_str();
  app.add_option("--cpu-seconds", cfg.cpu_seconds, "CPU time per process (0: unlimited)")
      ->capture_default_str();
  app.add_option("--max-file-mb", cfg.max_file_mb, "Largest file a process may write, MB")
      ->capture_default_str();
  app.add_option("--max-procs", cfg.max_procs, "Processes+threads in the sandbox (0: unlimited)")
      ->capture_default_str();
  app.add_option("--max-output-kb", cfg.max_output_kb, "Output passed through per stream, KB")
      ->capture_default_str();
  app.add_option("--max-open-files", cfg.max_open_files, "Open descriptors per process")
      ->capture_default_str();
  app.add_option("--memory-mb", cfg.memory_mb, "Memory of the whole sandbox, MB (0: unlimited)")
      ->capture_default_str();
  app.add_option("--ro", cfg.ro, "Host path visible read-only at the same path")
      ->take_all()
      ->allow_extra_args(false);
  app.add_option("--rw", cfg.rw, "Host path visible read-write at the same path")
      ->allow_extra_args(false);
  app.add_flag("--gpu", cfg.gpu,
               "Make every NVIDIA device node (and /sys, read-only) visible");
  app.add_option("--gpus", cfg.gpus,
                 "Only these GPUs (host indices in PCI order, e.g. 0,2; inside they are "
                 "numbered 0..n-1), with the control nodes and /sys read-only");
  app.add_option("--env", cfg.env, "NAME=VALUE; the command's environment is exactly these")
      ->allow_extra_args(false);
  app.add_flag("--unsafe-no-sandbox", cfg.unsafe_no_sandbox,
               "Run WITHOUT isolation (limits, deadline and env scrub only)");
  app.add_option("--bwrap", cfg.bwrap, "bubblewrap binary (default: $PATH, then next to us)");
  app.add_option("--cgroup", cfg.cgroup, "auto|require|off")->capture_default_str();
  app.add_option("--run-as-uid", cfg.run_as_uid, "As root: host uid the sandbox runs as");
  app.add_option("--run-as-gid", cfg.run_as_gid, "As root: host gid the sandbox runs as");
  app.add_option("--log-level", cfg.log_level, "trace|debug|info|warn|error")
      ->capture_default_str();
  app.add_option("command", cfg.command, "COMMAND [ARGS...] (after --)")->required();
  app.positionals_at_end();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitSetupFailure;
  }

  pkforge::LoggingOptions log;
  log.level = cfg.log_level;
  log.name = "pkforge-sandbox";
  if (absl::Status s = pkforge::InitLogging(log); !s.ok()) {
    return Fail(kExitSetupFailure, pkforge::AsStd(s.message()));
  }

  SandboxConfig config;
  config.bwrap_path = cfg.bwrap;
  config.run_as_uid = cfg.run_as_uid;
  config.run_as_gid = cfg.run_as_gid;
  if (cfg.cgroup == "auto") {
    config.cgroup_mode = CgroupMode::kAuto;
  } else if (cfg.cgroup == "require") {
    config.cgroup_mode = CgroupMode::kRequire;
  } else if (cfg.cgroup == "off") {
    config.cgroup_mode = CgroupMode::kOff;
  } else {
    return Fail(kExitSetupFailure,
                fmt::format("--cgroup {}: expected auto|require|off", cfg.cgroup));
  }
  std::vector<int> gpus;
  if (!cfg.gpus.empty()) {
    for (absl::string_view item : absl::StrSplit(cfg.gpus, ',')) {
      int index = -1;
      if (!absl::SimpleAtoi(item, &index) || index < 0) {
        return Fail(kExitSetupFailure,
                    fmt::format("--gpus {}: expected GPU indices like 0,2", cfg.gpus));
      }
      gpus.push_back(index);
    }
  }
  auto sandbox = Sandbox::Create(config);
  if (!sandbox.ok()) return Fail(kExitSetupFailure, pkforge::AsStd(sandbox.status().message()));

  // A scratch directory of our own when none was given.
  std::string scratch = cfg.scratch;
  bool own_scratch = false;
  if (scratch.empty()) {
    std::string templ = (std::filesystem::temp_directory_path() / "pkforge-sandbox-XXXXXX");
    if (mkdtemp(templ.data()) == nullptr) {
      return Fail(kExitSetupFailure,
                  pkforge::AsStd(pkforge::ErrnoError("mkdtemp", errno).message()));
    }
    scratch = templ;
    own_scratch = true;
  }

  SandboxPolicy policy;
  policy.scratch_dir = scratch;
  policy.scratch_read_only = cfg.scratch_read_only;
  policy.ro_paths = cfg.ro;
  policy.rw_paths = cfg.rw;
  policy.gpu = cfg.gpu || !cfg.gpus.empty();
  policy.gpus = gpus;
  policy.env = cfg.env;
  policy.stdin_fd = STDIN_FILENO;
  policy.timeout_ms = static_cast<int64_t>(cfg.timeout_s * 1000);
  policy.cpu_seconds = cfg.cpu_seconds;
  policy.max_file_mb = cfg.max_file_mb;
  policy.max_procs = cfg.max_procs;
  policy.max_open_files = cfg.max_open_files;
  policy.max_memory_mb = cfg.memory_mb;
  policy.max_output_bytes = cfg.max_output_kb * 1024;
  policy.unsafe_no_sandbox = cfg.unsafe_no_sandbox;

  // Termination requests kill the sandbox tree and then end us with the
  // usual 128+N: a dedicated thread waits for them synchronously.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  // SIGUSR2 only wakes the waiter thread when the command ends on its own.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR2}) sigaddset(&stop_signals, sig);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a closed stdout must not kill us mid-drain

  auto cleanup = [&]() {
    if (own_scratch) {
      std::error_code ec;
      std::filesystem::remove_all(scratch, ec);
    }
  };

  auto process = (*sandbox)->Spawn(cfg.command, policy);
  if (!process.ok()) {
    cleanup();
    const absl::Status& s = process.status();
    if (absl::IsNotFound(s)) return Fail(127, pkforge::AsStd(s.message()));
    if (absl::IsPermissionDenied(s)) return Fail(126, pkforge::AsStd(s.message()));
    return Fail(kExitSetupFailure,
                fmt::format("cannot set up the sandbox: {}", pkforge::AsStd(s.message())));
  }
  std::atomic<int> got_signal{0};
  std::thread waiter([&]() {
    int sig = 0;
    if (sigwait(&stop_signals, &sig) == 0 && sig != SIGUSR2) {
      got_signal = sig;
      (*process)->Kill();
    }
  });

  auto result = (*process)->Wait([](OutputStream which, std::string_view data) {
    WriteAll(which == OutputStream::kStdout ? STDOUT_FILENO : STDERR_FILENO, data);
  });
  pthread_kill(waiter.native_handle(), SIGUSR2);
  waiter.join();
  process->reset();
  cleanup();

  if (!result.ok()) {
    const absl::Status& s = result.status();
    if (absl::IsNotFound(s)) return Fail(127, pkforge::AsStd(s.message()));
    if (absl::IsPermissionDenied(s)) return Fail(126, pkforge::AsStd(s.message()));
    return Fail(kExitSetupFailure,
                fmt::format("cannot set up the sandbox: {}", pkforge::AsStd(s.message())));
  }
  if (result->stdout_truncated || result->stderr_truncated) {
    Fail(0, fmt::format("output truncated at {} KB per stream (stdout {} bytes, stderr {} bytes "
                        "written by the command)",
                        cfg.max_output_kb, result->stdout_total_bytes, result->stderr_total_bytes));
  }
  if (result->timed_out) {
    Fail(0, fmt::format("deadline of {} s reached; killed the whole sandbox", cfg.timeout_s));
  }
  if (got_signal != 0) return 128 + got_signal;
  return result->ShellExitCode();
}
