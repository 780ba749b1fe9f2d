// OrchestratorService: the pkforge.v1.Orchestrator gRPC service on the
// callback API.
//
// Contract
// - Every RPC is authenticated first (Authenticator) and fails with
//   UNAUTHENTICATED before any work when the token is missing or wrong.
// - Reactor threads never block: unary handlers run on a small thread pool
//   (SQLite reads and fsyncs happen there) and finish their reactor from it;
//   WatchJob is a ServerWriteReactor whose database reads run on that pool
//   and whose live events come from the EventLog on the appending thread.
// - WatchJob: events with seq > after_seq in order, each once, then live ones
//   until the job's terminal state event has been sent (or immediately after
//   the replay with no_follow); a heartbeat (not stored) is sent whenever the
//   stream was idle for heartbeat_interval. A watcher that falls more than
//   watch_buffer_events behind drops its live buffer and catches up from the
//   database, so a slow client costs bounded memory and still loses nothing.
// - Errors: absl statuses from the layers below are translated once, by
//   common/grpc_status.h.
//
// Threading: gRPC calls the handlers on its threads; the service is
// thread-safe. Shutdown() (after the gRPC server stopped) drains the pool.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <memory>
#include <thread>

#include "orchestrator/auth.h"
#include "orchestrator/event_log.h"
#include "orchestrator/executor_pool.h"
#include "orchestrator/job_manager.h"
#include "orchestrator/metrics.h"
#include "pkforge/v1/orchestrator.grpc.pb.h"
#include "storage/store.h"

namespace pkforge::orchestrator {

class OrchestratorService final : public v1::Orchestrator::CallbackService {
 public:
  struct Options {
    int threads = 4;
    double heartbeat_interval_s = 5;
    int watch_buffer_events = 1024;
    int watch_read_batch = 256;
  };
  struct Deps {
    storage::TrajectoryStore* store;
    EventLog* log;
    JobManager* jobs;
    ExecutorPool* executors;
    Metrics* metrics;
    const Authenticator* auth;
  };

  OrchestratorService(Options options, Deps deps);
  ~OrchestratorService() override;

  // Finishes queued work and stops the pool and timers. Call after the gRPC
  // server has shut down (no new calls arrive).
  void Shutdown();

  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* ctx,
                                      const v1::SubmitJobRequest* req, v1::Job* resp) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req,
                                   v1::Job* resp) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* ctx,
                                     const v1::ListJobsRequest* req,
                                     v1::ListJobsResponse* resp) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* ctx,
                                      const v1::CancelJobRequest* req, v1::Job* resp) override;
  grpc::ServerWriteReactor<v1::WatchJobResponse>* WatchJob(
      grpc::CallbackServerContext* ctx, const v1::WatchJobRequest* req) override;
  grpc::ServerUnaryReactor* GetTrajectory(grpc::CallbackServerContext* ctx,
                                          const v1::GetTrajectoryRequest* req,
                                          v1::Trajectory* resp) override;
  grpc::ServerUnaryReactor* AnalyzePlateau(grpc::CallbackServerContext* ctx,
                                           const v1::AnalyzePlateauRequest* req,
                                           v1::PlateauReport* resp) override;
  grpc::ServerUnaryReactor* ListProblems(grpc::CallbackServerContext* ctx,
                                         const v1::ListProblemsRequest* req,
                                         v1::ListProblemsResponse* resp) override;
  grpc::ServerUnaryReactor* ListExecutors(grpc::CallbackServerContext* ctx,
                                          const v1::ListExecutorsRequest* req,
                                          v1::ListExecutorsResponse* resp) override;

 private:
  class WatchCore;
  class WatchReactor;

  template <typename Fn>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* ctx, Fn fn);

  absl::Status DoGetTrajectory(const v1::GetTrajectoryRequest& req, v1::Trajectory* resp);
  absl::Status DoAnalyzePlateau(const v1::AnalyzePlateauRequest& req, v1::PlateauReport* resp);

  const Options options_;
  const Deps deps_;
  boost::asio::thread_pool pool_;
  boost::asio::io_context timers_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> timers_work_;
  std::thread timer_thread_;
  bool shut_down_ = false;
};

}  // namespace pkforge::orchestrator
