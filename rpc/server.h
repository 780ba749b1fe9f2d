// The start-up and shutdown shell of pkforge's gRPC servers (both daemons and
// the orchestrator tests' fake executor), which each wrote on their own: TLS
// or plaintext credentials (rpc/credentials.h), the standard health service
// (SERVING once started, NOT_SERVING from BeginShutdown), server reflection
// (grpcurl-style tools list and describe the API; like health it is not
// behind the bearer token: it only tells the public proto/ schema), the
// Prometheus endpoint, the dialable address with the bound port, and the
// two-step shutdown both daemons need (stop advertising, drain their own
// work, then stop gRPC).
//
// Thread safety: Start, BeginShutdown and Stop from one thread (the daemon's
// main or a test); the accessors from any thread once Start returned.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/metrics.h"

namespace pkforge::rpc {

struct ServerOptions {
  std::string listen;  // HOST:PORT; port 0 picks one
  // Both or neither (plaintext); PEM files. `tls_what` names the flag in errors.
  std::string tls_cert_file, tls_key_file;
  std::string tls_what = "tls_cert";
  std::vector<grpc::Service*> services;  // registered in this order; owned by the caller
  int max_receive_bytes = 0;             // 0: gRPC's default (4 MiB)
  bool reflection = true;                // server reflection (off for test fakes)
  // A Prometheus /metrics endpoint on this HOST:PORT when non-empty.
  std::string metrics_listen;
  const Metrics* metrics = nullptr;
};

class GrpcServer {
 public:
  // Listening and SERVING when it returns; UNAVAILABLE "cannot listen on ..."
  // when the address cannot be bound, INVALID_ARGUMENT for bad TLS files.
  static absl::StatusOr<std::unique_ptr<GrpcServer>> Start(const ServerOptions& options);
  ~GrpcServer();  // Stop(now) when not stopped

  int port() const { return port_; }
  // The address clients dial: the listen host with the bound port.
  std::string address() const { return address_; }
  bool tls() const { return tls_; }
  int metrics_port() const { return metrics_http_ ? metrics_http_->port() : 0; }
  grpc::Server* server() { return server_.get(); }

  // Health says NOT_SERVING (load balancers and the orchestrator's pool stop
  // sending work); calls are still served until Stop.
  void BeginShutdown();
  // Stops gRPC: calls still running at `deadline` are cancelled; returns
  // when every handler has returned. Then stops the metrics endpoint.
  void Stop(std::chrono::system_clock::time_point deadline);

 private:
  GrpcServer() = default;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<MetricsHttpServer> metrics_http_;
  int port_ = 0;
  std::string address_;
  bool tls_ = false;
  bool stopped_ = false;
};

}  // namespace pkforge::rpc
