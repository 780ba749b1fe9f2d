// Pipeline: one Evaluate from request to result (design sections 5 and 7).
//
//   validate -> compile (sandboxed, content-addressed cache, at most
//   compile_workers at once) -> queue for devices (DeviceQueue: fair, one
//   evaluation per GPU set) -> `pkforge-worker launch --json` in a sandbox
//   with the leased GPUs -> result -> GPU health check after a crash or
//   timeout -> lease returned.
//
// Compiles happen before an evaluation enters the device queue, so a GPU is
// never held while a compiler runs. Everything the candidate does ends in an
// EvaluationResult; only infrastructure failures (shutdown, a worker that
// could not be started at all, cancellation) are statuses.
//
// Thread safety: Run() blocks its caller (an evaluation thread, never a gRPC
// reactor) and may be called from many threads at once. Cancellation::Cancel
// may be called from any thread at any time.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "executor/compiler.h"
#include "executor/device.h"
#include "executor/device_queue.h"
#include "executor/runtime.h"
#include "pkforge/v1/executor.pb.h"

namespace pkforge::executor {

// Cancels one evaluation: stops a queued wait, a compile, or kills the
// sandboxed worker tree.
class Cancellation {
 public:
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }
  const std::atomic<bool>* flag() const { return &cancelled_; }
  // The process to kill on Cancel() (nullptr to clear). Kills at once if
  // already cancelled.
  void SetProcess(sandbox::SandboxProcess* process);

 private:
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  sandbox::SandboxProcess* process_ = nullptr;
};

class Pipeline {
 public:
  // Evaluations get private folders under scratch_root (see SandboxRoot).
  Pipeline(const Runtime* runtime, Compiler* compiler, DeviceQueue* queue, Devices* devices,
           Metrics* metrics, std::string scratch_root);

  // INVALID_ARGUMENT / FAILED_PRECONDITION naming the field.
  absl::Status Validate(const v1::EvaluateRequest& request) const;

  using ProgressFn = std::function<void(const v1::EvaluateProgress&)>;
  // The request must have passed Validate(). `progress` gets compiling,
  // queued and running messages (never the result).
  absl::StatusOr<v1::EvaluationResult> Run(const v1::EvaluateRequest& request,
                                           const std::string& evaluation_id,
                                           const std::string& client_key,
                                           const ProgressFn& progress, Cancellation* cancel);

 private:
  struct RunOutput {
    v1::EvaluationResult result;
    bool infrastructure_failure = false;
  };
  v1::EvaluationResult RunWorker(const v1::EvaluateRequest& request, const std::string& scratch,
                                 const std::string& artifact, const std::vector<int>& gpus,
                                 Cancellation* cancel);
  v1::EvaluationResult RunWorkerOnce(const v1::EvaluateRequest& request, const std::string& scratch,
                                 const std::string& artifact, const std::vector<int>& gpus,
                                 Cancellation* cancel);
  void Profile(const v1::EvaluateRequest& request, const std::string& scratch,
               const std::string& artifact, const std::vector<int>& gpus, Cancellation* cancel,
               v1::EvaluationResult* result);
  void Sanitize(const v1::EvaluateRequest& request, const std::string& scratch,
                const std::string& artifact, const std::vector<int>& gpus, Cancellation* cancel,
                v1::EvaluationResult* result);
  std::vector<std::string> LaunchArgv(const v1::EvaluateRequest& request,
                                      const std::string& artifact, bool correctness_only) const;

  const Runtime* runtime_;
  Compiler* compiler_;
  DeviceQueue* queue_;
  Devices* devices_;
  Metrics* metrics_;
  std::string scratch_root_;
};

}  // namespace pkforge::executor
