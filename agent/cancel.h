// CancelToken: cooperative cancellation with an optional deadline, shared by
// everything an agent loop waits on (HTTP calls to the LLM, evaluations, the
// backoff between retries).
//
// Contract
// - A token is cancelled explicitly (Cancel(reason), first reason wins, never
//   undone) or implicitly once its deadline passes on its Clock's monotonic
//   timeline. status() says which: OK, the Cancel() reason, or
//   DEADLINE_EXCEEDED.
// - A child token (constructed with a parent) is cancelled whenever its parent
//   is, with the parent's reason, and its effective deadline is the earlier of
//   its own and its parent's. A child must not outlive its parent.
// - Callbacks added with AddCallback() run once on explicit cancellation (on the
//   cancelling thread, or at once if already cancelled). Deadlines do not fire
//   callbacks: code that blocks propagates RemainingMicros() as its own timeout
//   (curl, gRPC deadlines) and polls, so no timer thread is needed per job.
// - SleepFor() waits in real time (a condition variable) even when the
//   Clock is a FakeClock; it returns early on Cancel() and at the deadline.
//
// Threading: every method is safe from any thread. RemoveCallback() returns
// only once the callback is neither running nor going to run, so the state it
// captures may be destroyed afterwards.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"

namespace pkforge::agent {

class CancelToken {
 public:
  static constexpr int64_t kNoDeadline = INT64_MAX;
  using CallbackId = uint64_t;

  explicit CancelToken(const Clock* clock = SystemClock::Get());
  // A child of `parent` (which must outlive it), on the parent's clock.
  explicit CancelToken(const CancelToken* parent);
  ~CancelToken();
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  // Cancels with `reason` (must be non-OK; CANCELLED by default). Idempotent.
  void Cancel(absl::Status reason = absl::CancelledError("cancelled"));

  // Tightens the deadline (monotonic micros of the clock); a later deadline
  // than the current one is ignored.
  void SetDeadline(int64_t deadline_mono_us);
  // Effective deadline (own and ancestors'), kNoDeadline when none.
  int64_t deadline_mono_us() const;
  // Micros until the effective deadline (<= 0 when passed), kNoDeadline when none.
  int64_t RemainingMicros() const;

  bool IsCancelled() const { return !status().ok(); }
  // OK, the Cancel() reason (own or inherited), or DEADLINE_EXCEEDED.
  absl::Status status() const;
  // True only for explicit cancellation (own or inherited), not a deadline.
  bool ExplicitlyCancelled() const;

  // Waits `micros` of real time, or less when cancelled or at the deadline.
  // Returns status() at wake-up.
  absl::Status SleepFor(int64_t micros) const;

  CallbackId AddCallback(std::function<void()> fn) const;
  void RemoveCallback(CallbackId id) const;

  const Clock* clock() const { return clock_; }

 private:
  absl::Status ExplicitStatus() const;

  const Clock* clock_;
  const CancelToken* parent_ = nullptr;
  CallbackId parent_callback_ = 0;

  mutable absl::Mutex mu_;
  mutable absl::CondVar cv_;  // cancelled, deadline moved, callbacks done (with mu_)
  absl::Status reason_ ABSL_GUARDED_BY(mu_);  // OK until cancelled
  int64_t deadline_mono_us_ ABSL_GUARDED_BY(mu_) = kNoDeadline;
  mutable std::map<CallbackId, std::function<void()>> callbacks_ ABSL_GUARDED_BY(mu_);
  mutable CallbackId next_callback_ ABSL_GUARDED_BY(mu_) = 1;
  mutable bool running_callbacks_ ABSL_GUARDED_BY(mu_) = false;
  mutable std::thread::id callbacks_thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pkforge::agent
