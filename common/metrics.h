// Metrics in the Prometheus text exposition format, and a tiny HTTP endpoint
// that serves them at GET /metrics (shared by the executor and orchestrator).
//
// A Metrics registry holds counters, gauges and histograms keyed by name and
// one optional label set ("status=\"OK\""). Values are doubles; Render()
// prints every family with its HELP and TYPE lines, families sorted by name.
// Gauges may also be computed at render time, for values the owner already
// tracks: one series (SetCallback, e.g. queue length) or a whole family whose
// label sets are only known then (SetFamilyCallback, e.g. jobs by state).
//
// Thread safety: every method is thread-safe; updates take one mutex (the
// call rates here are per evaluation / per event, not per element).
// Callbacks run on the rendering thread without that mutex held, so they may
// take their owners' locks even if those owners update metrics while holding
// them; they must not call SetCallback/SetFamilyCallback themselves.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace pkforge {

class Metrics {
 public:
  // Declares a family; repeated declarations are no-ops.
  void Declare(const std::string& name, const std::string& type /*counter|gauge|histogram*/,
               const std::string& help, std::vector<double> buckets = {});
  void Add(const std::string& name, double value, const std::string& labels = "");
  void Set(const std::string& name, double value, const std::string& labels = "");
  void Observe(const std::string& name, double value, const std::string& labels = "");
  void SetCallback(const std::string& name, std::function<double()> fn,
                   const std::string& labels = "");
  // Computes every series of `name` at render time: fn returns label set ->
  // value (e.g. {"state=\"running\"": 3}). Replaces an earlier one.
  void SetFamilyCallback(const std::string& name,
                         std::function<std::map<std::string, double>()> fn);
  double Get(const std::string& name, const std::string& labels = "") const;
  std::string Render() const;

 private:
  struct Histogram {
    std::vector<double> counts;  // per bucket (cumulative at render time)
    double sum = 0;
    double count = 0;
  };
  struct Family {
    std::string type, help;
    std::vector<double> buckets;
    std::map<std::string, double> values;
    std::map<std::string, std::function<double()>> callbacks;
    std::function<std::map<std::string, double>()> family_callback;
    std::map<std::string, Histogram> histograms;
  };
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

// Serves GET /metrics (and GET /healthz) on host:port from one thread.
class MetricsHttpServer {
 public:
  // Binds now (port 0 picks one); serving starts on a background thread.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& host_port,
                                                                   const Metrics* metrics);
  ~MetricsHttpServer();  // stops and joins
  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;
  void Serve();
  const Metrics* metrics_ = nullptr;
  int listen_fd_ = -1;
  int wake_fd_[2] = {-1, -1};
  int port_ = 0;
  std::thread thread_;
};

}  // namespace pkforge
