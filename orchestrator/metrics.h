// Metrics of the orchestrator: a typed facade over the shared Prometheus
// registry (pkforge::Metrics, common/metrics.h), so call sites name what
// happened rather than metric strings, and every family is declared once
// with its HELP text. pkforge::MetricsHttpServer serves registry() over HTTP
// GET /metrics.
//
// Contract
// - Counters only grow and start at 0; gauges are sampled from their owners
//   when rendered (jobs by state from the job manager, healthy executors from
//   the pool) via callbacks registered before serving starts.
// - The commit-latency histogram observes the time one event spends from the
//   start of its SQLite commit (together with its step's rows) until it has
//   been handed to every live watcher (commit + fan-out), in seconds.
//
// Threading: every method is thread-safe (the registry's). Render callbacks
// run without the registry's lock, so they may take their owners' locks.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "common/metrics.h"

namespace pkforge::orchestrator {

class Metrics {
 public:
  Metrics();  // declares every family

  void EventCommitted(double commit_to_fanout_s);
  void EvaluationFinished(const std::string& status);  // "OK", ..., "NO_RESULT"
  void WatchStreamOpened();
  void WatchStreamClosed();
  void JobSubmitted();
  void LlmCall(int64_t tokens);

  // Sampled at render time: name -> value for pkforge_jobs{state=name}.
  void SetJobsByState(std::function<std::map<std::string, int64_t>()> fn);
  void SetExecutorGauges(std::function<std::pair<int64_t, int64_t>()> healthy_and_total);

  std::string Render() const { return registry_.Render(); }
  const pkforge::Metrics& registry() const { return registry_; }

  int64_t events_committed() const;
  int64_t watch_streams() const;

 private:
  pkforge::Metrics registry_;
};

}  // namespace pkforge::orchestrator
