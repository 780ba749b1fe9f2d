// Orchestrator: one running pkforge-orchestrator -- the trajectory store, the
// event log, the executor pool, the job manager, the gRPC server (service +
// health) and the metrics endpoint, started and stopped in the right order.
// main.cc is a thin shell around it; tests run it in-process.
//
// Contract
// - Start() refuses (FAILED_PRECONDITION) to listen on a non-loopback
//   address without a token file, recovers unfinished jobs from the database
//   before serving, and returns once the server accepts calls.
// - Shutdown() (SIGTERM/SIGINT in main): stops admitting jobs, cancels
//   running ones (they end as interrupted with the given reason; queued ones
//   stay queued for the next start), lets watchers receive the final events,
//   stops the server and closes the database (checkpointing the WAL).
//
// Threading: Start/Shutdown from one thread; accessors are thread-safe.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "orchestrator/auth.h"
#include "orchestrator/config.h"
#include "orchestrator/event_log.h"
#include "orchestrator/executor_pool.h"
#include "orchestrator/job_manager.h"
#include "orchestrator/metrics.h"
#include "orchestrator/service.h"
#include "rpc/server.h"
#include "storage/store.h"

namespace pkforge::orchestrator {

class Orchestrator {
 public:
  // `resolver`: how dns:/// executor targets are resolved (null = the
  // system's; tests pass a fake).
  static absl::StatusOr<std::unique_ptr<Orchestrator>> Start(
      const OrchestratorConfig& config, std::shared_ptr<Resolver> resolver = nullptr);
  ~Orchestrator();

  void Shutdown(const std::string& reason = "shutdown");
  // Re-reads the executors file and re-resolves dns targets now (SIGHUP);
  // the first problem is returned after everything else was applied.
  absl::Status ReloadExecutors();

  int port() const { return port_; }
  int metrics_port() const { return server_ ? server_->metrics_port() : 0; }
  std::string address() const;  // host:port actually bound
  JobManager* jobs() { return jobs_.get(); }
  ExecutorPool* executors() { return pool_.get(); }
  storage::TrajectoryStore* store() { return store_.get(); }
  Metrics* metrics() { return &metrics_; }

 private:
  Orchestrator() = default;

  OrchestratorConfig config_;
  Metrics metrics_;
  std::unique_ptr<storage::TrajectoryStore> store_;
  std::unique_ptr<EventLog> log_;
  std::unique_ptr<ExecutorPool> pool_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<OrchestratorService> service_;
  std::unique_ptr<rpc::GrpcServer> server_;  // health, reflection, metrics endpoint
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace pkforge::orchestrator
