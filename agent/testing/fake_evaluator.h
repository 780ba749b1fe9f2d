// A fake Evaluator for agent tests: a scripted function decides each result,
// an optional latency is spent waiting on the cancel token (so cancellation
// and wall budgets are exercised), and calls and concurrency are counted.
//
// Threading: Evaluate() is thread-safe, like a real evaluator; the function
// is called concurrently when the agent evaluates concurrently.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "agent/evaluator.h"

namespace pkforge::agent::testing {

class FakeEvaluator : public Evaluator {
 public:
  using Fn = std::function<v1::EvaluationResult(const v1::EvaluateRequest&)>;

  // Default: every candidate is OK with speedup 1.0.
  FakeEvaluator();
  explicit FakeEvaluator(Fn fn) : fn_(std::move(fn)) {}

  absl::StatusOr<EvaluationOutcome> Evaluate(const v1::EvaluateRequest& request,
                                             const ProgressCallback& progress,
                                             const CancelToken& cancel) override;

  void set_latency_ms(int ms) { latency_ms_ = ms; }
  void set_queue_ms(double ms) { queue_ms_ = ms; }
  // Makes the next `n` calls fail with `status` (no result).
  void FailNext(int n, absl::Status status);

  int calls() const { return calls_.load(); }
  int max_concurrency() const { return max_concurrency_.load(); }
  std::vector<v1::EvaluateRequest> requests() const;

  // Results a scripted function typically returns.
  static v1::EvaluationResult Ok(double speedup);
  static v1::EvaluationResult CompileError(const std::string& output);
  static v1::EvaluationResult WrongOutput(int rank, int64_t index, double expected, double actual);

 private:
  Fn fn_;
  std::atomic<int> latency_ms_{0};
  double queue_ms_ = 0;
  std::atomic<int> calls_{0};
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_concurrency_{0};
  mutable std::mutex mu_;
  std::vector<v1::EvaluateRequest> requests_;
  int fail_next_ = 0;
  absl::Status fail_status_;
};

}  // namespace pkforge::agent::testing
