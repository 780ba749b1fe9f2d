// A fake pkforge.v1.Executor for orchestrator tests and benchmarks: a real
// gRPC server on a real socket (127.0.0.1, ephemeral port unless given),
// with fixed ListProblems/DescribeDevice answers and an Evaluate that streams
// compiling -> queued -> running -> result after a configurable delay.
//
// Results are a pure function of the source, so tests can predict them:
//   source contains "FAKE_COMPILE_ERROR" -> COMPILE_ERROR
//   source contains "FAKE_WRONG_OUTPUT"  -> WRONG_OUTPUT
//   source contains "FAKE_HOLD" -> stays running (after the running
//     message) until ReleaseHeld() or cancellation, then as below
//   otherwise OK with speedup 0.5 + (first 8 hex digits of sha256 % 2000) / 1000
//   (in [0.5, 2.5)), reference 100 us, candidate 100 / speedup us.
// Problems: allreduce, allgather, reducescatter (host and cuda backends,
// f32/f16/bf16, presets tiny/default, world size 1..64).
//
// Threading: a synchronous gRPC service (one server thread per call in
// flight); counters are atomics. Safe to query from any thread.
#pragma once

#include <grpcpp/server.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "pkforge/v1/executor.grpc.pb.h"
#include "rpc/server.h"

namespace pkforge::orchestrator::testing {

struct FakeExecutorOptions {
  std::string listen = "127.0.0.1:0";
  int delay_ms = 20;        // from request to result, spread over the stages
  int usable_gpus = 8;      // cuda capacity reported by DescribeDevice
  std::string token;        // required bearer token, "" = none
  std::string log_file;     // append "evaluate <client_tag>\n" per request (flushed)
  // Append "<client_tag>\thidden=<0|1>\tsizes=<ladder,...>\n" per request (flushed).
  std::string shapes_log_file;
  std::string executor_id = "fake-executor";
  // Non-empty: every Evaluate is refused with INVALID_ARGUMENT and this
  // message, as an executor refuses a configuration it never runs.
  std::string refuse_evaluations;
  // The first `busy_first` Evaluate calls are refused with RESOURCE_EXHAUSTED
  // "executor busy", as a real executor at its max_in_flight answers.
  int busy_first = 0;
  int64_t gpu_memory_bytes = 0;  // GpuInfo.memory_bytes of every fake GPU (0 = unknown)
  std::string tls_cert, tls_key;  // PEM files: serve TLS (both or neither)
};

// The result the fake returns for `source` (see the top comment).
v1::EvaluationResult FakeResult(const std::string& source);

class FakeExecutor {
 public:
  static absl::StatusOr<std::unique_ptr<FakeExecutor>> Start(FakeExecutorOptions options);
  ~FakeExecutor();

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int evaluations_started() const;
  int busy_answers() const;  // RESOURCE_EXHAUSTED answers given (busy_first)
  int evaluations_finished() const;
  int max_in_flight() const;
  void set_delay_ms(int ms);
  // Lets every FAKE_HOLD evaluation (held now or later) finish.
  void ReleaseHeld();
  void Shutdown();

 private:
  class Service;
  FakeExecutor() = default;
  std::unique_ptr<Service> service_;
  std::unique_ptr<rpc::GrpcServer> server_;
  int port_ = 0;
};

}  // namespace pkforge::orchestrator::testing
