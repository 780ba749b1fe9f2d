// pkforge-orchestrator: the daemon that runs optimization jobs (docs/design.md
// section 8). Flags override the --config file, which overrides the
// defaults in orchestrator/config.h. SIGTERM/SIGINT shut down gracefully;
// a second signal exits at once. SIGHUP re-reads --executors-file and
// re-resolves dns:/// executors (errors are logged; the previous list stays).
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <thread>

#include "common/logging.h"
#include "common/version.h"
#include "orchestrator/config.h"
#include "orchestrator/orchestrator.h"
#include "spdlog/spdlog.h"

namespace {

using pkforge::orchestrator::ExecutorEndpoint;
using pkforge::orchestrator::OrchestratorConfig;

}  // namespace

// Long (~150 lines) because it is mostly the flat list of flags, each next to
// its help text, then the config merge and the server's start and stop.
int main(int argc, char** argv) {
  CLI::App app{"pkforge-orchestrator: runs LLM/search/replay agents that optimize multi-GPU "
               "kernels, with a durable trajectory database"};
  app.set_version_flag("--version", "pkforge-orchestrator " + pkforge::VersionString());
  std::string config_file;
  OrchestratorConfig flags;
  std::vector<std::string> executors;
  app.add_option("--config", config_file, "JSON config file (keys as in orchestrator/config.h)");
  auto* listen = app.add_option("--listen", flags.listen, "HOST:PORT to serve the API on")
                     ->capture_default_str();
  auto* db = app.add_option("--db", flags.db, "Trajectory database (SQLite)")->capture_default_str();
  app.add_option("--executor", executors,
                 "Executor HOST:PORT, or dns:///NAME:PORT for one executor per address of NAME "
                 "(re-resolved every --discovery-interval; repeatable)");
  auto* executors_file = app.add_option(
      "--executors-file", flags.executors_file,
      "File of executor targets, one per line (HOST:PORT or dns:///NAME:PORT, # comments); "
      "re-read on SIGHUP and when it changes");
  auto* discovery = app.add_option("--discovery-interval", flags.discovery_interval_s,
                                   "Seconds between re-resolving dns:/// executors and checking "
                                   "--executors-file for changes")
                        ->capture_default_str();
  auto* executor_ca = app.add_option(
      "--executor-tls-ca", flags.executor_tls_ca_file,
      "TLS to executors trusting this CA (PEM), for every --executor and executors-file entry "
      "(docs/tls.md)");
  std::vector<std::string> providers;
  app.add_option("--provider", providers,
                 "LLM provider jobs may use, NAME=KIND,BASE_URL[,KEY_ENV] or "
                 "name=NAME,kind=KIND,base_url=URL[,key_env=VAR][,models=M1|M2]"
                 "[,allow_client_key=true] (repeatable; KIND openai|anthropic; KEY_ENV names this "
                 "process's environment variable holding the key; models: the only models jobs "
                 "may use; allow_client_key: clients may send their own key instead). Clients "
                 "pick one by NAME; they never choose URLs or variables.");
  auto* replay_root = app.add_option("--replay-root", flags.replay_root,
                                     "Directory replay jobs may read candidates from (default: "
                                     "none; clients send sources inline)");
  auto* token = app.add_option("--token-file", flags.token_file,
                               "Bearer token clients must send (required off loopback)");
  auto* etoken = app.add_option("--executor-token-file", flags.executor_token_file,
                                "Bearer token sent to executors");
  auto* maxjobs = app.add_option("--max-concurrent-jobs", flags.max_concurrent_jobs,
                                 "Jobs running at once (others queue)");
  auto* maxqueued = app.add_option("--max-queued-jobs", flags.max_queued_jobs,
                                   "Jobs that may wait for a slot; beyond it SubmitJob answers "
                                   "RESOURCE_EXHAUSTED");
  auto* maxqueuedmib = app.add_option("--max-queued-spec-mib", flags.max_queued_spec_mib,
                                      "MiB the waiting jobs' specs (replay sources included) "
                                      "may take; beyond it SubmitJob answers RESOURCE_EXHAUSTED");
  auto* logfmt = app.add_option("--log-format", flags.log_format, "text | json")
                     ->check(CLI::IsMember({"text", "json"}));
  auto* loglevel = app.add_option("--log-level", flags.log_level, "trace..off");
  auto* metrics = app.add_option("--metrics-listen", flags.metrics_listen,
                                 "HOST:PORT for Prometheus GET /metrics");
  auto* cert = app.add_option("--tls-cert", flags.tls_cert, "TLS certificate chain (PEM)");
  auto* key = app.add_option("--tls-key", flags.tls_key, "TLS private key (PEM)");
  auto* hb = app.add_option("--heartbeat-interval", flags.heartbeat_interval_s,
                            "WatchJob heartbeat interval (s)");
  auto* hi = app.add_option("--health-interval", flags.health_interval_s,
                            "Executor health-check interval (s)");
  CLI11_PARSE(app, argc, argv);

  OrchestratorConfig config;
  if (!config_file.empty()) {
    auto loaded = pkforge::orchestrator::LoadConfigFile(config_file);
    if (!loaded.ok()) {
      std::fprintf(stderr, "pkforge-orchestrator: %s\n", loaded.status().ToString().c_str());
      return 2;
    }
    config = *loaded;
  }
  auto take = [](CLI::Option* opt, auto& dst, const auto& src) {
    if (opt->count() > 0) dst = src;
  };
  take(listen, config.listen, flags.listen);
  take(db, config.db, flags.db);
  take(token, config.token_file, flags.token_file);
  take(etoken, config.executor_token_file, flags.executor_token_file);
  take(maxjobs, config.max_concurrent_jobs, flags.max_concurrent_jobs);
  take(maxqueued, config.max_queued_jobs, flags.max_queued_jobs);
  take(maxqueuedmib, config.max_queued_spec_mib, flags.max_queued_spec_mib);
  take(logfmt, config.log_format, flags.log_format);
  take(loglevel, config.log_level, flags.log_level);
  take(metrics, config.metrics_listen, flags.metrics_listen);
  take(cert, config.tls_cert, flags.tls_cert);
  take(key, config.tls_key, flags.tls_key);
  take(hb, config.heartbeat_interval_s, flags.heartbeat_interval_s);
  take(hi, config.health_interval_s, flags.health_interval_s);
  take(executors_file, config.executors_file, flags.executors_file);
  take(discovery, config.discovery_interval_s, flags.discovery_interval_s);
  take(executor_ca, config.executor_tls_ca_file, flags.executor_tls_ca_file);
  if (!providers.empty()) {
    config.providers.clear();
    for (const auto& f : providers) {
      auto p = pkforge::orchestrator::ParseProvider(f);
      if (!p.ok()) {
        std::fprintf(stderr, "pkforge-orchestrator: %s\n", std::string(p.status().message()).c_str());
        return 2;
      }
      config.providers.push_back(*p);
    }
  }
  if (*replay_root) config.replay_root = flags.replay_root;
  if (!executors.empty()) {
    config.executors.clear();
    for (const auto& e : executors) config.executors.push_back(ExecutorEndpoint{.address = e});
  }

  if (auto s = pkforge::InitLogging({.level = config.log_level,
                                     .format = config.log_format,
                                     .file = config.log_file,
                                     .name = "orchestrator"});
      !s.ok()) {
    std::fprintf(stderr, "pkforge-orchestrator: %s\n", s.ToString().c_str());
    return 2;
  }

  // Signals are taken synchronously by the main thread (sigwait), so every
  // thread started below inherits the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto orch = pkforge::orchestrator::Orchestrator::Start(config);
  if (!orch.ok()) {
    spdlog::critical("cannot start: {}", orch.status().ToString());
    return orch.status().code() == absl::StatusCode::kFailedPrecondition ||
                   orch.status().code() == absl::StatusCode::kInvalidArgument
               ? 2
               : 1;
  }
  // Machine-readable line for supervisors and tests (the port may be 0 = ephemeral).
  std::printf("LISTENING %s\n", (*orch)->address().c_str());
  if ((*orch)->metrics_port() > 0) std::printf("METRICS %d\n", (*orch)->metrics_port());
  std::fflush(stdout);

  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
    spdlog::info("SIGHUP: re-reading the executor list");
    if (auto s = (*orch)->ReloadExecutors(); !s.ok()) {
      spdlog::error("SIGHUP: {}", std::string(s.message()));
    }
  }
  sigdelset(&signals, SIGHUP);  // during shutdown SIGHUP stays blocked (ignored)
  std::thread([signals]() mutable {
    int again = 0;
    sigwait(&signals, &again);
    std::fprintf(stderr, "pkforge-orchestrator: second signal %d, exiting now\n", again);
    _exit(128 + again);
  }).detach();
  (*orch)->Shutdown("shutdown");
  orch->reset();
  spdlog::info("stopped");
  return 0;
}
