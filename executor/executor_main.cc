// pkforge-executor: the GPU executor daemon (executor/README.md).
#include <signal.h>
#include <unistd.h>

#include <iostream>

#include "CLI/CLI.hpp"
#include "common/cpu_latency.h"
#include "common/logging.h"
#include "common/version.h"
#include "executor/config.h"
#include "executor/server.h"
#include "spdlog/spdlog.h"

int main(int argc, char** argv) {
  using pkforge::executor::ExecutorConfig;
  CLI::App app{"pkforge-executor: compiles, runs, checks, times and profiles candidate kernels"};
  app.set_version_flag("--version", "pkforge-executor " + pkforge::VersionString());
  std::string config_file;
  app.add_option("--config", config_file, "JSON config file (keys = the flag names with _)");
  // Flags are parsed into a separate struct and applied over the config file.
  ExecutorConfig flags;
  app.add_option("--listen", flags.listen, "HOST:PORT (non-loopback needs --token-file)");
  app.add_option("--data-dir", flags.data_dir, "scratch and compile cache");
  app.add_option("--token-file", flags.token_file, "bearer token file");
  app.add_option("--tls-cert", flags.tls_cert_file, "PEM certificate (TLS)");
  app.add_option("--tls-key", flags.tls_key_file, "PEM private key (TLS)");
  app.add_option("--gpus", flags.gpus, "all | none | 0,1,...");
  app.add_option("--metrics-listen", flags.metrics_listen, "HOST:PORT for GET /metrics");
  app.add_option("--executor-id", flags.executor_id, "name in results (default: host name)");
  app.add_option("--host-slots", flags.host_slots, "host-backend evaluations at once");
  app.add_option("--compile-workers", flags.compile_workers, "parallel compiles (0: cores)");
  app.add_option("--cache-max-mb", flags.cache_max_mb, "compile cache bound");
  app.add_option("--default-timeout", flags.default_timeout_s, "seconds per worker phase");
  app.add_option("--worker", flags.worker_path, "pkforge-worker path");
  app.add_option("--nvcc", flags.nvcc, "nvcc path, or 'none'");
  app.add_option("--log-format", flags.log_format, "text | json");
  app.add_option("--log-level", flags.log_level, "trace..critical");
  app.add_flag("--no-measure", [&flags](int64_t) { flags.measure_ceilings = false; },
               "skip the ceiling measurements at start");
  app.add_flag("--nccl-nvls", flags.nccl_nvls_enable, "allow NVLink multicast (NCCL_NVLS_ENABLE=1)");
  app.add_flag("--unsafe-no-sandbox", flags.unsafe_no_sandbox,
               "run candidates WITHOUT isolation (marked in every result)");
  app.add_option("--shutdown-grace", flags.shutdown_grace_s, "seconds in-flight work gets on SIGTERM");
  CLI11_PARSE(app, argc, argv);

  ExecutorConfig config;
  if (!config_file.empty()) {
    absl::Status s = pkforge::executor::MergeConfigFile(config_file, &config);
    if (!s.ok()) {
      std::cerr << "pkforge-executor: " << s.message() << "\n";
      return 2;
    }
  }
  // Flags given on the command line win over the file.
  auto given = [&app](const char* name) { return app.count(name) > 0; };
  if (given("--listen")) config.listen = flags.listen;
  if (given("--data-dir")) config.data_dir = flags.data_dir;
  if (given("--token-file")) config.token_file = flags.token_file;
  if (given("--tls-cert")) config.tls_cert_file = flags.tls_cert_file;
  if (given("--tls-key")) config.tls_key_file = flags.tls_key_file;
  if (given("--gpus")) config.gpus = flags.gpus;
  if (given("--metrics-listen")) config.metrics_listen = flags.metrics_listen;
  if (given("--executor-id")) config.executor_id = flags.executor_id;
  if (given("--host-slots")) config.host_slots = flags.host_slots;
  if (given("--compile-workers")) config.compile_workers = flags.compile_workers;
  if (given("--cache-max-mb")) config.cache_max_mb = flags.cache_max_mb;
  if (given("--default-timeout")) config.default_timeout_s = flags.default_timeout_s;
  if (given("--worker")) config.worker_path = flags.worker_path;
  if (given("--nvcc")) config.nvcc = flags.nvcc;
  if (given("--log-format")) config.log_format = flags.log_format;
  if (given("--log-level")) config.log_level = flags.log_level;
  if (given("--no-measure")) config.measure_ceilings = false;
  if (given("--nccl-nvls")) config.nccl_nvls_enable = flags.nccl_nvls_enable;
  if (given("--unsafe-no-sandbox")) config.unsafe_no_sandbox = true;
  if (given("--shutdown-grace")) config.shutdown_grace_s = flags.shutdown_grace_s;

  pkforge::LoggingOptions log;
  log.format = config.log_format;
  log.level = config.log_level;
  if (absl::Status s = pkforge::InitLogging(log); !s.ok()) {
    std::cerr << "pkforge-executor: " << s.message() << "\n";
    return 2;
  }
  char self[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (absl::Status s = pkforge::executor::Finalize(&config, n > 0 ? self : argv[0]); !s.ok()) {
    spdlog::critical("configuration: {}", std::string(s.message()));
    return 2;
  }

  // The CPUs out of deep idle states for the daemon's lifetime: a candidate
  // stopped between its timed batches would otherwise wake from one more
  // slowly than the reference (common/cpu_latency.h). The judges run in
  // sandboxes that cannot open the device, so the daemon holds it for them.
  const pkforge::CpuWakeLatencyHold wake = pkforge::CpuWakeLatencyHold::AcquireUnlessDisabled();
  if (wake.held()) spdlog::info("CPU wake-up latency: {}", wake.detail());
  else spdlog::warn("CPU wake-up latency: {} (timings may favour the reference)", wake.detail());

  // Signals are taken synchronously by this thread; block them before any
  // other thread exists so every thread inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto server = pkforge::executor::ExecutorServer::Start(config);
  if (!server.ok()) {
    spdlog::critical("cannot start: {}", std::string(server.status().message()));
    return 3;
  }
  // One line on stdout for scripts and `pkforge local`: where to connect.
  std::cout << "pkforge-executor listening on " << (*server)->address() << std::endl;
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("signal {}: graceful shutdown", sig);
  (*server)->Shutdown(config.shutdown_grace_s);
  spdlog::info("stopped");
  return 0;
}
