// ExecutorService: the gRPC face of the executor (proto service
// pkforge.v1.Executor, callback API).
//
// Reactor threads only validate, enqueue and write: every Evaluate runs on a
// thread of its own (compile, queue wait, worker run all block there), and
// DescribeDevice with remeasure runs on a detached thread too. Progress
// messages are queued per call and written one at a time (the callback API
// allows one outstanding write).
//
// Authentication: with a token, every RPC must carry
// "authorization: Bearer <token>" (compared in constant time); otherwise
// UNAUTHENTICATED. The token never appears in logs or results.
//
// Shutdown: BeginShutdown() makes new Evaluate calls fail with UNAVAILABLE;
// WaitIdle() waits for the in-flight ones; CancelAll() cancels what is left
// (their callers get UNAVAILABLE "executor shutting down").
//
// Thread safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/net.h"
#include "executor/pipeline.h"
#include "pkforge/v1/executor.grpc.pb.h"

namespace pkforge::executor {

class ExecutorService final : public v1::Executor::CallbackService {
 public:
  ExecutorService(const ExecutorConfig* config, Pipeline* pipeline, Devices* devices,
                  DeviceQueue* queue, Compiler* compiler, Metrics* metrics, std::string token);
  ~ExecutorService() override;

  grpc::ServerWriteReactor<v1::EvaluateProgress>* Evaluate(
      grpc::CallbackServerContext* context, const v1::EvaluateRequest* request) override;
  grpc::ServerUnaryReactor* DescribeDevice(grpc::CallbackServerContext* context,
                                           const v1::DescribeDeviceRequest* request,
                                           v1::DeviceInfo* response) override;
  grpc::ServerUnaryReactor* ListProblems(grpc::CallbackServerContext* context,
                                         const v1::ListProblemsRequest* request,
                                         v1::ListProblemsResponse* response) override;

  void BeginShutdown();
  // True when nothing is in flight before the deadline.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);
  void CancelAll();
  int in_flight() const;

  // Shared state of one Evaluate call (public for the reactor in service.cc).
  struct Call;

 private:
  grpc::Status CheckAuth(const grpc::CallbackServerContext* context) const;

  const ExecutorConfig* config_;
  Pipeline* pipeline_;
  Devices* devices_;
  DeviceQueue* queue_;
  Compiler* compiler_;
  Metrics* metrics_;
  BearerToken token_;  // common/net.h: digest, constant-time comparison
  std::atomic<bool> shutting_down_{false};
  mutable absl::Mutex mu_;
  absl::CondVar idle_cv_;  // a call or detached thread finished (with mu_)
  std::set<std::shared_ptr<Call>> calls_ ABSL_GUARDED_BY(mu_);
  int detached_threads_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace pkforge::executor
