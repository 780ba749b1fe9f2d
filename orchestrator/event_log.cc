#include "orchestrator/event_log.h"

#include <algorithm>

#include "common/status.h"
#include "orchestrator/convert.h"

namespace pkforge::orchestrator {

EventLog::EventLog(storage::TrajectoryStore* store, Metrics* metrics, const Clock* clock)
    : store_(store), metrics_(metrics), clock_(clock) {}

std::shared_ptr<std::mutex> EventLog::JobLock(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto& m = job_locks_[job_id];
  if (!m) m = std::make_shared<std::mutex>();
  return m;
}

absl::StatusOr<v1::Event> EventLog::Append(
    v1::Event event, const storage::StepRows& rows,
    const std::function<void(const v1::Event&)>& on_commit) {
  if (event.wall_us() == 0) event.set_wall_us(clock_->NowWallMicros());
  ASSIGN_OR_RETURN(storage::EventRecord record, EventToRecord(event));
  std::shared_ptr<std::mutex> job_lock = JobLock(event.job_id());
  std::lock_guard job_guard(*job_lock);
  const int64_t start = clock_->NowMonotonicMicros();
  ASSIGN_OR_RETURN(int64_t seq, store_->AppendEventWith(rows, record));
  event.set_seq(seq);
  if (on_commit) on_commit(event);
  std::vector<std::shared_ptr<Listener>> listeners;
  {
    absl::MutexLock lock(&mu_);
    auto it = listeners_.find(event.job_id());
    if (it != listeners_.end()) listeners = it->second;
  }
  for (const auto& l : listeners) l->OnEvent(event);
  if (metrics_ != nullptr) {
    metrics_->EventCommitted(static_cast<double>(clock_->NowMonotonicMicros() - start) / 1e6);
  }
  return event;
}

void EventLog::Subscribe(const std::string& job_id, std::shared_ptr<Listener> listener) {
  absl::MutexLock lock(&mu_);
  listeners_[job_id].push_back(std::move(listener));
}

void EventLog::Unsubscribe(const std::string& job_id, const Listener* listener) {
  absl::MutexLock lock(&mu_);
  auto it = listeners_.find(job_id);
  if (it == listeners_.end()) return;
  auto& v = it->second;
  v.erase(std::remove_if(v.begin(), v.end(), [&](const auto& l) { return l.get() == listener; }),
          v.end());
  if (v.empty()) listeners_.erase(it);
}

void EventLog::Forget(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  job_locks_.erase(job_id);
}

}  // namespace pkforge::orchestrator
