#include "orchestrator/orchestrator.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/logging.h"
#include "common/status.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace pkforge::orchestrator {
namespace {

absl::StatusOr<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("cannot read {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Orchestrator>> Orchestrator::Start(
    const OrchestratorConfig& config, std::shared_ptr<Resolver> resolver) {
  RETURN_IF_ERROR(ValidateConfig(config));
  std::string token;
  if (!config.token_file.empty()) {
    ASSIGN_OR_RETURN(token, ReadSecretFile(config.token_file));
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

  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!config.tls_cert.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ASSIGN_OR_RETURN(std::string cert, ReadWhole(config.tls_cert));
    ASSIGN_OR_RETURN(std::string key, ReadWhole(config.tls_key));
    ssl.pem_key_cert_pairs.push_back({key, cert});
    creds = grpc::SslServerCredentials(ssl);
  }
  grpc::EnableDefaultHealthCheckService(true);
  // Server reflection (grpcurl-style tools list and describe the API); like
  // the health service it is not behind the token: it only tells the public
  // proto/ schema.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.listen, creds, &o->port_);
  builder.RegisterService(o->service_.get());
  o->server_ = builder.BuildAndStart();
  if (!o->server_ || o->port_ == 0) {
    o->jobs_->Shutdown("startup failed", 5);
    return absl::UnavailableError(fmt::format("cannot listen on {}", config.listen));
  }
  if (auto* health = o->server_->GetHealthCheckService()) health->SetServingStatus(true);

  if (!config.metrics_listen.empty()) {
    ASSIGN_OR_RETURN(o->metrics_http_, pkforge::MetricsHttpServer::Start(config.metrics_listen,
                                                                         &o->metrics_.registry()));
  }
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

std::string Orchestrator::address() const {
  auto colon = config_.listen.rfind(':');
  return fmt::format("{}:{}", config_.listen.substr(0, colon), port_);
}

void Orchestrator::Shutdown(const std::string& reason) {
  if (shut_down_) return;
  shut_down_ = true;
  spdlog::info("shutting down ({})", reason);
  if (server_) {
    if (auto* health = server_->GetHealthCheckService()) health->SetServingStatus(false);
  }
  // Jobs first, while watchers are still connected, so they get the
  // terminal events; then the server (cancelling what is left after 2 s).
  if (jobs_) jobs_->Shutdown(reason, config_.shutdown_grace_s);
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_->Wait();
  }
  if (service_) service_->Shutdown();
  if (pool_) pool_->Stop();
  metrics_http_.reset();
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
