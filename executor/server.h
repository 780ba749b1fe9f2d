// ExecutorServer: a running pkforge-executor, assembled from its config:
// sandbox (self-tested; refuses to start without isolation unless
// unsafe_no_sandbox), compiler + cache, devices (probe, ceilings), device
// queue, pipeline, the gRPC service with health checking, and the
// Prometheus endpoint. pkforge-executor's main is Start + WaitForSignal +
// Shutdown; tests run it in-process on an ephemeral port.
//
// Thread safety: Start/Shutdown from one thread; everything else is internal.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "executor/compiler.h"
#include "executor/config.h"
#include "executor/device.h"
#include "executor/device_queue.h"
#include "executor/pipeline.h"
#include "executor/runtime.h"
#include "executor/service.h"
#include "rpc/server.h"
#include "sandbox/sandbox.h"

namespace pkforge::executor {

class ExecutorServer {
 public:
  // `config` must have passed Finalize().
  static absl::StatusOr<std::unique_ptr<ExecutorServer>> Start(const ExecutorConfig& config);
  ~ExecutorServer();

  // The address clients dial (the bound port when the config asked for :0).
  std::string address() const { return address_; }
  int metrics_port() const { return server_ ? server_->metrics_port() : 0; }
  Metrics& metrics() { return metrics_; }
  ExecutorService& service() { return *service_; }

  // Stops accepting work, lets in-flight evaluations finish for up to
  // `grace_s`, cancels the rest (their callers get UNAVAILABLE), stops gRPC.
  void Shutdown(double grace_s);

 private:
  ExecutorServer() = default;
  // Declared first: released last, after every run under the root is over.
  std::unique_ptr<SandboxRootClaim> root_claim_;
  ExecutorConfig config_;
  Metrics metrics_;
  std::unique_ptr<sandbox::Sandbox> sandbox_;
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<Compiler> compiler_;
  std::unique_ptr<Devices> devices_;
  std::unique_ptr<DeviceQueue> queue_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<ExecutorService> service_;
  std::unique_ptr<rpc::GrpcServer> server_;  // health, reflection, metrics endpoint
  std::string address_;
  std::string sandbox_root_;  // removed at shutdown when it is not data_dir
  bool shut_down_ = false;
};

// Token files are read by common/net.h's ReadTokenFile (one format for both
// daemons and the CLI).

}  // namespace pkforge::executor
