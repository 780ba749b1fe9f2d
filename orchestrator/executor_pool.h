// ExecutorPool: the executors this orchestrator dispatches evaluations to
// (design sections 7-8), and the agent::Evaluator every job uses.
//
// Contract
// - Health: a background thread checks every executor every
//   health_interval_s: gRPC health (grpc.health.v1, service ""), then
//   DescribeDevice and ListProblems. Any failure marks it unhealthy with the
//   error; the next success marks it healthy again. An executor without a
//   health service (UNIMPLEMENTED) is judged by DescribeDevice alone.
// - Dispatch: an evaluation goes to the least-loaded (fewest in flight)
//   healthy executor that lists the problem for the backend, has the backend,
//   and (cuda) has at least world_size usable GPUs. When none qualifies
//   (executors down or restarting) it waits for one, bounded by the job's
//   own budget: the cancel token (its deadline is the job's wall budget);
//   a token without a deadline waits at most dispatch_wait_s. It then fails
//   with the token's status, or UNAVAILABLE naming what was missing. The
//   WaitObserver, when given, hears when such a wait starts (with the
//   reason) and ends, so the job can say why it is not progressing.
// - Evaluate() runs Executor.Evaluate as a server stream, forwards progress
//   messages, propagates the cancel token (TryCancel on cancellation, its
//   deadline as the RPC deadline) and sends "authorization: Bearer <token>"
//   when the executor has a token. When the executor dies mid-evaluation
//   (UNAVAILABLE, a stream that ends without a result, or a call the server
//   side aborted) the executor is marked unhealthy and the evaluation is
//   retried up to evaluation_retries times, on another executor when one can
//   take it, else on the first that becomes healthy again (waiting as above);
//   otherwise the error is returned (the agent records a failed evaluation
//   and goes on).
// - Membership (issue 19 items 4-5, orchestrator/discovery.h): a target
//   "HOST:PORT" is one executor for the pool's life; "dns:///NAME:PORT" is
//   one executor per address of NAME, re-resolved every discovery_interval_s;
//   the executors file's targets are re-read when it changes (mtime or size,
//   checked at the same interval) and on Refresh() (SIGHUP in main.cc). A new
//   address becomes an executor (health-checked at once); a vanished one is
//   drained: it takes no new evaluation, its evaluations in flight finish on
//   it (or, if it dies, are retried elsewhere as above), then it is removed.
//   A temporary resolution failure keeps a name's executors.
// - queue_ms of an outcome = time waiting for an executor here + the
//   executor's own queue time (EvaluationResult.stages.queue_ms).
//
// Threading: all public methods are thread-safe; Evaluate() blocks the
// calling (agent) thread and is called concurrently by many jobs.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "agent/evaluator.h"
#include "common/clock.h"
#include "orchestrator/config.h"
#include "orchestrator/discovery.h"
#include "orchestrator/metrics.h"
#include "pkforge/v1/executor.grpc.pb.h"
#include "pkforge/v1/orchestrator.pb.h"

namespace pkforge::orchestrator {

class ExecutorPool final : public agent::Evaluator {
 public:
  struct Options {
    std::vector<ExecutorEndpoint> executors;
    std::string default_token_file;
    double health_interval_s = 2;
    double rpc_timeout_s = 5;
    int evaluation_retries = 1;
    // Longest wait for an executor when the job has no deadline.
    double dispatch_wait_s = 300;
    const Clock* clock = SystemClock::Get();
    // One target per line (discovery.h); "" = none. Its targets get the
    // token, TLS and CA of file_defaults (its address is ignored).
    std::string executors_file;
    ExecutorEndpoint file_defaults;
    // How often dns targets are re-resolved and the file's mtime checked.
    double discovery_interval_s = 5;
    std::shared_ptr<Resolver> resolver;  // null = SystemResolver()
  };

  // Reads token files and the executors file, resolves dns targets and
  // creates channels (connecting lazily). Fails on an unreadable token, CA
  // or executors file and on a malformed target; a name that does not
  // resolve yet is only logged (it is retried every discovery interval).
  static absl::StatusOr<std::unique_ptr<ExecutorPool>> Create(Options options);
  ~ExecutorPool() override;

  // Runs one health round now (synchronously), then starts the background
  // thread.
  void Start();
  void Stop();
  // One synchronous health round of every executor.
  void CheckNow();
  // Re-reads the executors file (always when `force_file_read`, else only
  // when it changed) and re-resolves every dns target, then adds the new
  // executors (a health round follows on the health thread) and drains the
  // vanished ones. Returns the first problem (unreadable or malformed file:
  // the previous targets are kept; a name that did not resolve; an executor
  // that could not be created), after applying everything else.
  absl::Status Refresh(bool force_file_read = true);

  std::vector<v1::ExecutorStatus> List() const;
  std::pair<int64_t, int64_t> HealthyAndTotal() const;
  // Problems listed by healthy executors, merged by name (backends united,
  // world-size bounds widened).
  std::vector<v1::ProblemInfo> Problems() const;
  // OK when some healthy executor can run `spec` now; otherwise
  // INVALID_ARGUMENT naming the field no executor accepts (problem, backend,
  // world_size), or UNAVAILABLE when no executor is healthy at all.
  absl::Status CheckRunnable(const v1::JobSpec& spec) const;
  // The problem as the agent needs it (tensors for the spec's configuration,
  // reference source), from an executor that can run the spec.
  absl::StatusOr<v1::ProblemInfo> DescribeProblem(const v1::JobSpec& spec) const;
  // The device of the executor that would take the spec now.
  absl::StatusOr<v1::DeviceInfo> DeviceFor(const v1::JobSpec& spec) const;

  // Hears a job's waits for an executor (see Dispatch above). Called on the
  // waiting thread, never with the pool's lock held.
  class WaitObserver {
   public:
    virtual ~WaitObserver() = default;
    virtual void WaitStarted(const std::string& reason) = 0;
    // `executor`: the one that can run it now, "" when the wait gave up.
    virtual void WaitEnded(const std::string& executor) = 0;
  };

  absl::StatusOr<agent::EvaluationOutcome> Evaluate(const v1::EvaluateRequest& request,
                                                    const agent::ProgressCallback& progress,
                                                    const agent::CancelToken& cancel) override {
    return Evaluate(request, progress, cancel, nullptr);
  }
  absl::StatusOr<agent::EvaluationOutcome> Evaluate(const v1::EvaluateRequest& request,
                                                    const agent::ProgressCallback& progress,
                                                    const agent::CancelToken& cancel,
                                                    WaitObserver* observer);
  // Returns once some healthy executor can run `spec` (OK), waiting as an
  // evaluation's dispatch does; the token's status when it fires first.
  absl::Status AwaitRunnable(const v1::JobSpec& spec, const agent::CancelToken& cancel,
                             WaitObserver* observer);

 private:
  struct Executor;
  explicit ExecutorPool(Options options);

  struct Wanted;
  using ExecutorPtr = std::shared_ptr<Executor>;

  void CheckOne(Executor& e);
  void HealthLoop();
  absl::Status RefreshImpl(bool force_file_read, absl::Status* create_error);
  absl::StatusOr<ExecutorPtr> MakeExecutor(const Wanted& w) const;
  // Removes drained executors with nothing in flight.
  void ReapDrainedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The best executor for (backend, problem, world size) that is not in
  // `exclude`, or null.
  ExecutorPtr PickLocked(v1::Backend backend, const std::string& problem, int32_t world_size,
                         const std::vector<ExecutorPtr>& exclude) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool CanRunLocked(const Executor& e, v1::Backend backend, const std::string& problem,
                    int32_t world_size) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits (see Dispatch) for an executor for (backend, problem, world size),
  // preferring those not in `tried`; returns it with in_flight counted when
  // `reserve`, or the reason it gave up.
  absl::StatusOr<ExecutorPtr> WaitForExecutor(v1::Backend backend, const std::string& problem,
                                              int32_t world_size,
                                              const std::vector<ExecutorPtr>& tried,
                                              const agent::CancelToken& cancel,
                                              WaitObserver* observer, bool reserve);
  // Why no executor can run the configuration now (for waits and errors).
  std::string NoExecutorReasonLocked(v1::Backend backend, const std::string& problem,
                                     int32_t world_size) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Options options_;
  std::string default_token_;
  bool dynamic_ = false;  // some dns target or an executors file: refresh periodically

  // Serialises Refresh (health thread, SIGHUP, tests); guards the file state.
  absl::Mutex refresh_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::vector<std::string> file_targets_ ABSL_GUARDED_BY(refresh_mu_);
  int64_t file_mtime_ns_ ABSL_GUARDED_BY(refresh_mu_) = -1;
  int64_t file_size_ ABSL_GUARDED_BY(refresh_mu_) = -1;
  // Last round's, to log each change once.
  std::vector<std::string> resolve_errors_ ABSL_GUARDED_BY(refresh_mu_);

  // Also guards the mutable state of every Executor (health, load, drained:
  // executor_pool.cc says which fields), which the analysis cannot name.
  mutable absl::Mutex mu_;
  // Shared: an evaluation keeps its executor alive after it is removed.
  std::vector<ExecutorPtr> executors_ ABSL_GUARDED_BY(mu_);
  absl::CondVar health_cv_;  // health rounds finished / stop (with mu_)
  absl::CondVar wake_cv_;    // wakes the health loop early (with mu_)
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool recheck_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t round_robin_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread health_thread_;
};

}  // namespace pkforge::orchestrator
