#include "orchestrator/orchestrator.h"

#include <filesystem>

#include "common/logging.h"
#include "common/net.h"
#include "common/status.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace pkforge::orchestrator {

absl::StatusOr<std::unique_ptr<Orchestrator>> Orchestrator::Start(
    const OrchestratorConfig& config, std::shared_ptr<Resolver> resolver) {
  RETURN_IF_ERROR(ValidateConfig(config));
  std::string token;
  if (!config.token_file.empty()) {
    ASSIGN_OR_RETURN(token, ReadTokenFile(config.token_file, TokenRole::kRequire, "token_file"));
    RegisterSecret(token);
  } else if (!IsLoopbackAddress(config.listen)) {
    return absl::FailedPreconditionError(fmt::format(
        "refusing to listen on non-loopback address {} without --token-file (clients would be "
        "unauthenticated)",
        config.listen));
  }
  std::unique_ptr<Orchestrator> o(new Orchestrator());
  o->config_ = config;

  std::filesystem::path db(config.db);
  if (db.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(db.parent_path(), ec);
  }
  ASSIGN_OR_RETURN(o->store_, storage::TrajectoryStore::Open(config.db));
  o->log_ = std::make_unique<EventLog>(o->store_.get(), &o->metrics_);

  ExecutorPool::Options po;
  po.executors = config.executors;
  // The operator's executor CA applies to every executor that names no TLS
  // setting of its own (command line, string entries, the executors file).
  if (!config.executor_tls_ca_file.empty()) {
    for (auto& ep : po.executors) {
      if (!ep.tls && ep.tls_ca_file.empty()) {
        ep.tls = true;
        ep.tls_ca_file = config.executor_tls_ca_file;
      }
    }
    po.file_defaults.tls = true;
    po.file_defaults.tls_ca_file = config.executor_tls_ca_file;
  }
  po.executors_file = config.executors_file;
  po.discovery_interval_s = config.discovery_interval_s;
  po.resolver = resolver;
  po.default_token_file = config.executor_token_file;
  po.health_interval_s = config.health_interval_s;
  po.rpc_timeout_s = config.executor_rpc_timeout_s;
  po.evaluation_retries = config.evaluation_retries;
  ASSIGN_OR_RETURN(o->pool_, ExecutorPool::Create(po));
  o->pool_->Start();

  JobManager::Options jo;
  jo.max_concurrent_jobs = config.max_concurrent_jobs;
  jo.max_queued_jobs = config.max_queued_jobs;
  jo.max_queued_spec_bytes = int64_t{config.max_queued_spec_mib} << 20;
  jo.resume_jobs = config.resume_jobs;
  jo.wall_grace_s = config.wall_grace_s;
  jo.agent.max_consecutive_failures = config.max_consecutive_failures;
  jo.agent.llm.retry.max_attempts = config.llm_max_attempts;
  jo.agent.llm.retry.initial_backoff_ms = config.llm_initial_backoff_ms;
  jo.agent.llm.retry.max_backoff_ms = config.llm_max_backoff_ms;
  jo.agent.parallel_evaluations = config.parallel_evaluations;
  jo.providers = config.providers;
  jo.replay_root = config.replay_root;
  // The agent checks the root again when a replay job runs (resumed jobs too).
  jo.agent.replay_root = config.replay_root;
  o->jobs_ = std::make_unique<JobManager>(jo, o->store_.get(), o->log_.get(), o->pool_.get(),
                                          &o->metrics_);
  RETURN_IF_ERROR(Annotate(o->jobs_->Recover(), "recovering jobs"));

  o->metrics_.SetJobsByState([jobs = o->jobs_.get()] { return jobs->CountByState(); });
  o->metrics_.SetExecutorGauges([pool = o->pool_.get()] { return pool->HealthyAndTotal(); });

  o->auth_ = std::make_unique<Authenticator>(token);
  OrchestratorService::Options so;
  so.threads = config.rpc_threads;
  so.heartbeat_interval_s = config.heartbeat_interval_s;
  so.watch_buffer_events = config.watch_buffer_events;
  o->service_ = std::make_unique<OrchestratorService>(
      so, OrchestratorService::Deps{o->store_.get(), o->log_.get(), o->jobs_.get(),
                                    o->pool_.get(), &o->metrics_, o->auth_.get()});

  rpc::ServerOptions ro;
  ro.listen = config.listen;
  ro.tls_cert_file = config.tls_cert;
  ro.tls_key_file = config.tls_key;
  ro.services = {o->service_.get()};
  ro.metrics_listen = config.metrics_listen;
  ro.metrics = &o->metrics_.registry();
  auto server = rpc::GrpcServer::Start(ro);
  if (!server.ok()) {
    o->jobs_->Shutdown("startup failed", 5);
    return server.status();
  }
  o->server_ = *std::move(server);
  o->port_ = o->server_->port();
  spdlog::info("pkforge-orchestrator listening on {} (port {}, {}{}), database {}, {} executor(s)",
               config.listen, o->port_, o->auth_->enabled() ? "bearer token" : "no auth",
               config.tls_cert.empty() ? "" : ", TLS", config.db,
               o->pool_->HealthyAndTotal().second);
  return o;
}

absl::Status Orchestrator::ReloadExecutors() {
  if (!pool_ || shut_down_) return absl::FailedPreconditionError("the orchestrator is stopping");
  return pool_->Refresh(true);
}

std::string Orchestrator::address() const { return server_ ? server_->address() : ""; }

void Orchestrator::Shutdown(const std::string& reason) {
  if (shut_down_) return;
  shut_down_ = true;
  spdlog::info("shutting down ({})", reason);
  if (server_) server_->BeginShutdown();
  // Jobs first, while watchers are still connected, so they get the
  // terminal events; then the server (cancelling what is left after 2 s).
  if (jobs_) jobs_->Shutdown(reason, config_.shutdown_grace_s);
  if (server_) server_->Stop(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (service_) service_->Shutdown();
  if (pool_) pool_->Stop();
}

Orchestrator::~Orchestrator() {
  Shutdown();
  // Destroy in dependency order: users before what they use.
  server_.reset();
  service_.reset();
  jobs_.reset();
  pool_.reset();
  log_.reset();
  store_.reset();  // closes the database, checkpointing the WAL
}

}  // namespace pkforge::orchestrator
