// Metrics of the orchestrator in the Prometheus text exposition format
// (version 0.0.4), served over HTTP GET /metrics by MetricsHttpServer.
//
// Contract
// - Counters only grow; gauges are sampled from their owners when rendered
//   (jobs by state from the job manager, healthy executors from the pool) via
//   callbacks registered before serving starts.
// - The commit-latency histogram observes the time one event spends from the
//   start of its SQLite commit until it has been handed to every live watcher
//   (commit + fan-out), in seconds.
//
// Threading: every method is thread-safe; counters are atomics, the rest is
// guarded by one mutex. The HTTP server runs one thread of its own and serves
// one connection at a time (scrapes are rare and tiny).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace pkforge::orchestrator {

class Metrics {
 public:
  Metrics();

  void EventCommitted(double commit_to_fanout_s);
  void EvaluationFinished(const std::string& status);  // "OK", ..., "NO_RESULT"
  void WatchStreamOpened() { watch_streams_.fetch_add(1); }
  void WatchStreamClosed() { watch_streams_.fetch_sub(1); }
  void JobSubmitted() { jobs_submitted_.fetch_add(1); }
  void LlmCall(int64_t tokens) {
    llm_calls_.fetch_add(1);
    llm_tokens_.fetch_add(tokens);
  }

  // Sampled at render time: name -> value for pkforge_jobs{state=name}.
  void SetJobsByState(std::function<std::map<std::string, int64_t>()> fn);
  void SetExecutorGauges(std::function<std::pair<int64_t, int64_t>()> healthy_and_total);

  std::string Render() const;

  int64_t events_committed() const { return events_committed_.load(); }
  int64_t watch_streams() const { return watch_streams_.load(); }

 private:
  std::atomic<int64_t> events_committed_{0};
  std::atomic<int64_t> watch_streams_{0};
  std::atomic<int64_t> jobs_submitted_{0};
  std::atomic<int64_t> llm_calls_{0};
  std::atomic<int64_t> llm_tokens_{0};

  mutable std::mutex mu_;
  std::map<std::string, int64_t> evaluations_by_status_;
  std::vector<double> bucket_bounds_;    // seconds, ascending
  std::vector<int64_t> bucket_counts_;   // not cumulative; +Inf is the last slot
  double latency_sum_s_ = 0;
  int64_t latency_count_ = 0;
  std::function<std::map<std::string, int64_t>()> jobs_by_state_;
  std::function<std::pair<int64_t, int64_t>()> executors_;
};

// GET /metrics (and /healthz) on a TCP address, Boost.Beast, one thread.
class MetricsHttpServer {
 public:
  // `address` is HOST:PORT (port 0 = ephemeral). The server renders `metrics`
  // on each request; `metrics` must outlive the server.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& address,
                                                                  const Metrics* metrics);
  ~MetricsHttpServer();  // stops and joins
  int port() const { return port_; }

 private:
  struct Impl;
  MetricsHttpServer() = default;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace pkforge::orchestrator
