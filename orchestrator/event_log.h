// EventLog: the durable, ordered event stream of every job, and its live
// fan-out to watchers (WatchJob).
//
// Contract
// - Append() commits the event to the trajectory database (which assigns the
//   next per-job seq and fsyncs) and only then hands it to the job's live
//   listeners, so no watcher ever sees an event that could be lost. The
//   step's rows, when given, commit in the same transaction as the event
//   (TrajectoryStore::AppendEventWith): a watcher that sees the event finds
//   its rows in the database, and a failed step leaves neither.
// - Per job, Append() calls are serialised from commit through fan-out, so
//   listeners receive a job's events in seq order, each exactly once, with
//   no gaps among the events appended after they subscribed.
// - Gap-free watching: a watcher subscribes first, then reads the database
//   after its cursor. Every event is either committed before that read (the
//   read returns it) or published after the subscription (the listener gets
//   it); events in both are deduplicated by seq on the watcher's side.
// - Listener::OnEvent runs on the appending thread (an agent thread) while
//   the job's append lock is held: it must be quick and never block or call
//   back into the EventLog.
//
// Threading: all methods are thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "orchestrator/metrics.h"
#include "pkforge/v1/orchestrator.pb.h"
#include "storage/store.h"

namespace pkforge::orchestrator {

class EventLog {
 public:
  class Listener {
   public:
    virtual ~Listener() = default;
    virtual void OnEvent(const v1::Event& event) = 0;
  };

  EventLog(storage::TrajectoryStore* store, Metrics* metrics,
           const Clock* clock = SystemClock::Get());

  // Commits `event` (job_id and payload set; seq assigned here; wall_us 0 =
  // now) together with `rows` (see storage::StepRows; the pointees must stay
  // valid for the call) and fans it out. Returns the event as committed
  // (with its seq).
  // `on_commit` (optional) runs after the commit and before any listener
  // sees the event, on this thread with the job's append lock held (quick,
  // never calls back into the EventLog): what a watcher learns from the event
  // is already true for every other reader (GetJob after a terminal event).
  absl::StatusOr<v1::Event> Append(
      v1::Event event, const storage::StepRows& rows = {},
      const std::function<void(const v1::Event&)>& on_commit = nullptr);

  void Subscribe(const std::string& job_id, std::shared_ptr<Listener> listener);
  void Unsubscribe(const std::string& job_id, const Listener* listener);

  // Drops the per-job lock of a job that will get no more events.
  void Forget(const std::string& job_id);

  storage::TrajectoryStore* store() const { return store_; }

 private:
  std::shared_ptr<std::mutex> JobLock(const std::string& job_id);

  storage::TrajectoryStore* store_;
  Metrics* metrics_;
  const Clock* clock_;

  absl::Mutex mu_;
  // Per job: serialises Append from commit through fan-out (held while the
  // listeners run, so never taken with mu_ held).
  std::map<std::string, std::shared_ptr<std::mutex>> job_locks_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::shared_ptr<Listener>>> listeners_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pkforge::orchestrator
