// OrchestratorConfig: everything tunable in pkforge-orchestrator, one struct
// with in-class defaults (design section 11). Sources, later ones winning:
// the defaults below, a JSON file (--config FILE; keys are the field names,
// unknown keys are an error so a typo never silently keeps a default), then
// command-line flags.
//
// Threading: a plain value; copy it.
#pragma once

#include <string>
#include <vector>

#include "common/net.h"
#include "absl/status/statusor.h"

namespace pkforge::orchestrator {

// An LLM provider the operator allows jobs to use (issue #15: a client never
// chooses which environment variable is sent, nor to which host). Clients
// name it in LlmConfig.provider_name.
struct LlmProvider {
  std::string name;      // what clients put in provider_name
  std::string kind;      // openai | anthropic
  std::string base_url;  // http(s)://...
  std::string key_env;   // environment variable of this process holding the key ("" = none)
  // Models jobs may use through it; empty = any.
  std::vector<std::string> models;
  // Clients may send their own key (LlmConfig.api_key) for this provider; it
  // then replaces the key_env key for that job only and is never stored.
  bool allow_client_key = false;
};
// The --provider flag, either positional "NAME=KIND,BASE_URL[,KEY_ENV]" or
// "name=NAME,kind=KIND,base_url=URL[,key_env=VAR][,models=M1|M2][,allow_client_key=true]".
absl::StatusOr<LlmProvider> ParseProvider(const std::string& flag);
// What a client asked of a provider it named, beyond its name: the model
// must be among `provider.models` when it lists any (INVALID_ARGUMENT,
// spec.agent.llm.model); a client key (non-empty `client_key`) needs
// allow_client_key (PERMISSION_DENIED, spec.agent.llm.api_key) and must be
// 1-4096 printable ASCII characters (it becomes an HTTP header: no CR/LF).
// Messages quote no key and no environment variable.
absl::Status CheckProviderUse(const LlmProvider& provider, const std::string& model,
                              const std::string& client_key);

struct ExecutorEndpoint {
  // HOST:PORT (one executor) or dns:///NAME:PORT (one per address of NAME,
  // followed as it changes; orchestrator/discovery.h).
  std::string address;
  std::string token_file;  // bearer token for this executor; "" = executor_token_file
  bool tls = false;        // TLS to this executor (system roots or tls_ca_file)
  std::string tls_ca_file;
};

struct OrchestratorConfig {
  std::string listen = "127.0.0.1:50061";
  std::string db = "pkforge-data/trajectory.db";
  std::vector<ExecutorEndpoint> executors;
  // One executor target per line ('#' comments), re-read on SIGHUP and when
  // it changes; its targets get executor_token_file and executor_tls_ca_file.
  std::string executors_file;
  // How often dns targets are re-resolved and executors_file is checked.
  double discovery_interval_s = 5;
  // TLS to executors, trusting this CA, for every executor without tls and
  // tls_ca_file of its own (--executor, string entries, executors_file).
  std::string executor_tls_ca_file;
  std::vector<LlmProvider> providers;  // the only LLM endpoints and keys jobs may use
  // Replay jobs may read candidates from files only under this directory
  // (resolved, symlinks included); "" = replay sources only inline in the
  // request.
  std::string replay_root;
  std::string executor_token_file;  // default bearer token sent to executors
  // Required for any non-loopback listen address: clients must send
  // "authorization: Bearer <token>".
  std::string token_file;
  std::string tls_cert, tls_key;  // both or neither: serve TLS
  std::string metrics_listen;     // HOST:PORT of GET /metrics; "" = off
  std::string log_format = "text";  // text | json
  std::string log_level = "info";
  std::string log_file;

  int max_concurrent_jobs = 64;  // running at once; the rest wait in FIFO order
  // The queue's bounds (jobs waiting for a slot, and their specs' bytes:
  // replay sources included): a submission beyond either is refused with
  // RESOURCE_EXHAUSTED, so one client cannot grow the daemon's memory
  // without bound (red team round 27: 60 jobs of 3.9 MiB took it from 33 to
  // 590 MiB in 6 s).
  int max_queued_jobs = 1024;
  int max_queued_spec_mib = 1024;
  int rpc_threads = 4;           // pool running RPC handlers off the reactor threads
  double heartbeat_interval_s = 5;
  int watch_buffer_events = 1024;  // live events buffered per watcher before it re-reads SQLite
  bool resume_jobs = true;         // restart search/replay jobs that were running at a crash
  double wall_grace_s = 5;         // the manager's deadline: wall budget + this
  double shutdown_grace_s = 10;    // how long SIGTERM waits for jobs to stop

  double health_interval_s = 2;
  double executor_rpc_timeout_s = 5;
  int evaluation_retries = 1;  // on another executor, when one dies mid-evaluation

  // Agent tuning (agent::AgentOptions).
  int max_consecutive_failures = 3;
  int llm_max_attempts = 6;
  double llm_initial_backoff_ms = 1000;
  double llm_max_backoff_ms = 60000;
  int parallel_evaluations = 0;
};

// Reads `path` (JSON object) over `base`.
absl::StatusOr<OrchestratorConfig> LoadConfigFile(const std::string& path,
                                                  OrchestratorConfig base = {});
// Range and consistency checks, naming the offending key.
absl::Status ValidateConfig(const OrchestratorConfig& config);

// IsLoopbackAddress (127.0.0.0/8, ::1, localhost, unix: sockets) is
// common/net.h's, shared with the executor.

// Token files (the orchestrator's own and the executors') are read by
// common/net.h's ReadTokenFile, the one format of both daemons and the CLI.

}  // namespace pkforge::orchestrator
