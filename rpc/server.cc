#include "rpc/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include "common/status.h"
#include "fmt/format.h"
#include "rpc/credentials.h"

namespace pkforge::rpc {

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Start(const ServerOptions& o) {
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> creds,
                   ServerCredentials(o.tls_cert_file, o.tls_key_file, o.tls_what));
  std::unique_ptr<GrpcServer> s(new GrpcServer());
  s->tls_ = !o.tls_cert_file.empty();
  // Both are process-wide switches read by the next ServerBuilder.
  grpc::EnableDefaultHealthCheckService(true);
  if (o.reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(o.listen, creds, &s->port_);
  for (grpc::Service* service : o.services) builder.RegisterService(service);
  if (o.max_receive_bytes > 0) builder.SetMaxReceiveMessageSize(o.max_receive_bytes);
  s->server_ = builder.BuildAndStart();
  if (!s->server_ || s->port_ == 0) {
    s->server_.reset();
    return absl::UnavailableError(fmt::format("cannot listen on {}", o.listen));
  }
  s->address_ = fmt::format("{}:{}", o.listen.substr(0, o.listen.rfind(':')), s->port_);
  if (auto* health = s->server_->GetHealthCheckService()) health->SetServingStatus(true);
  if (!o.metrics_listen.empty()) {
    if (o.metrics == nullptr) {
      return absl::InvalidArgumentError("metrics_listen: no metrics registry to serve");
    }
    ASSIGN_OR_RETURN(s->metrics_http_, MetricsHttpServer::Start(o.metrics_listen, o.metrics));
  }
  return s;
}

void GrpcServer::BeginShutdown() {
  if (stopped_ || !server_) return;
  if (auto* health = server_->GetHealthCheckService()) health->SetServingStatus(false);
}

void GrpcServer::Stop(std::chrono::system_clock::time_point deadline) {
  if (stopped_) return;
  BeginShutdown();
  stopped_ = true;
  if (server_) {
    server_->Shutdown(deadline);
    server_->Wait();
  }
  metrics_http_.reset();
}

GrpcServer::~GrpcServer() { Stop(std::chrono::system_clock::now()); }

}  // namespace pkforge::rpc
