#include "orchestrator/metrics.h"

#include "fmt/format.h"

namespace pkforge::orchestrator {
namespace {

constexpr char kJobs[] = "pkforge_jobs";
constexpr char kExecutors[] = "pkforge_executors";
constexpr char kExecutorsHealthy[] = "pkforge_executors_healthy";
constexpr char kJobsSubmitted[] = "pkforge_jobs_submitted_total";
constexpr char kEventsCommitted[] = "pkforge_events_committed_total";
constexpr char kWatchStreams[] = "pkforge_watch_streams";
constexpr char kLlmCalls[] = "pkforge_llm_calls_total";
constexpr char kLlmTokens[] = "pkforge_llm_tokens_total";
constexpr char kEvaluations[] = "pkforge_evaluations_total";
constexpr char kEventCommitSeconds[] = "pkforge_event_commit_seconds";

}  // namespace

Metrics::Metrics() {
  registry_.Declare(kJobs, "gauge",
                    "Jobs by state (queued/running: this process; others: database).");
  registry_.Declare(kExecutors, "gauge", "Configured executors.");
  registry_.Declare(kExecutorsHealthy, "gauge", "Executors that passed the last health check.");
  registry_.Declare(kJobsSubmitted, "counter", "Jobs accepted by SubmitJob.");
  registry_.Declare(kEventsCommitted, "counter", "Events committed to the trajectory database.");
  registry_.Declare(kWatchStreams, "gauge", "Open WatchJob streams.");
  registry_.Declare(kLlmCalls, "counter", "LLM calls recorded.");
  registry_.Declare(kLlmTokens, "counter", "Prompt plus completion tokens of recorded LLM calls.");
  registry_.Declare(kEvaluations, "counter", "Evaluations finished, by result status.");
  registry_.Declare(kEventCommitSeconds, "histogram",
                    "Event commit (with its step's rows) plus fan-out to watchers.",
                    {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5});
  // Present from the first scrape, so rate() sees the start of every counter.
  for (const char* name :
       {kJobsSubmitted, kEventsCommitted, kWatchStreams, kLlmCalls, kLlmTokens}) {
    registry_.Add(name, 0);
  }
}

void Metrics::EventCommitted(double commit_to_fanout_s) {
  registry_.Add(kEventsCommitted, 1);
  registry_.Observe(kEventCommitSeconds, commit_to_fanout_s);
}

void Metrics::EvaluationFinished(const std::string& status) {
  registry_.Add(kEvaluations, 1, fmt::format("status=\"{}\"", status));
}

void Metrics::WatchStreamOpened() { registry_.Add(kWatchStreams, 1); }
void Metrics::WatchStreamClosed() { registry_.Add(kWatchStreams, -1); }
void Metrics::JobSubmitted() { registry_.Add(kJobsSubmitted, 1); }

void Metrics::LlmCall(int64_t tokens) {
  registry_.Add(kLlmCalls, 1);
  registry_.Add(kLlmTokens, static_cast<double>(tokens));
}

void Metrics::SetJobsByState(std::function<std::map<std::string, int64_t>()> fn) {
  registry_.SetFamilyCallback(kJobs, [fn = std::move(fn)] {
    std::map<std::string, double> out;
    for (const auto& [state, n] : fn()) {
      out[fmt::format("state=\"{}\"", state)] = static_cast<double>(n);
    }
    return out;
  });
}

void Metrics::SetExecutorGauges(std::function<std::pair<int64_t, int64_t>()> healthy_and_total) {
  registry_.SetCallback(kExecutors,
                        [fn = healthy_and_total] { return static_cast<double>(fn().second); });
  registry_.SetCallback(kExecutorsHealthy, [fn = std::move(healthy_and_total)] {
    return static_cast<double>(fn().first);
  });
}

int64_t Metrics::events_committed() const {
  return static_cast<int64_t>(registry_.Get(kEventsCommitted));
}

int64_t Metrics::watch_streams() const {
  return static_cast<int64_t>(registry_.Get(kWatchStreams));
}

}  // namespace pkforge::orchestrator
