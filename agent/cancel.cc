#include "agent/cancel.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace pkforge::agent {

CancelToken::CancelToken(const Clock* clock) : clock_(clock) {}

CancelToken::CancelToken(const CancelToken* parent) : clock_(parent->clock_), parent_(parent) {
  // The parent runs this on its own Cancel(); if it is already cancelled the
  // callback runs right here, before the constructor returns.
  parent_callback_ = parent_->AddCallback([this] { Cancel(parent_->ExplicitStatus()); });
}

CancelToken::~CancelToken() {
  if (parent_ != nullptr) parent_->RemoveCallback(parent_callback_);
  // Our own callbacks must not be running while members are destroyed.
  absl::MutexLock lock(&mu_);
  while (running_callbacks_ && callbacks_thread_ != std::this_thread::get_id()) cv_.Wait(&mu_);
}

void CancelToken::Cancel(absl::Status reason) {
  if (reason.ok()) reason = absl::CancelledError("cancelled");
  std::map<CallbackId, std::function<void()>> to_run;
  {
    absl::MutexLock lock(&mu_);
    if (!reason_.ok()) return;
    reason_ = std::move(reason);
    to_run.swap(callbacks_);
    running_callbacks_ = true;
    callbacks_thread_ = std::this_thread::get_id();
  }
  cv_.SignalAll();  // wake SleepFor() waiters
  for (auto& [id, fn] : to_run) fn();
  {
    absl::MutexLock lock(&mu_);
    running_callbacks_ = false;
  }
  cv_.SignalAll();  // wake RemoveCallback() waiters
}

void CancelToken::SetDeadline(int64_t deadline_mono_us) {
  {
    absl::MutexLock lock(&mu_);
    deadline_mono_us_ = std::min(deadline_mono_us_, deadline_mono_us);
  }
  cv_.SignalAll();  // sleepers recompute their wake-up time
}

int64_t CancelToken::deadline_mono_us() const {
  int64_t own;
  {
    absl::MutexLock lock(&mu_);
    own = deadline_mono_us_;
  }
  return parent_ ? std::min(own, parent_->deadline_mono_us()) : own;
}

int64_t CancelToken::RemainingMicros() const {
  const int64_t d = deadline_mono_us();
  if (d == kNoDeadline) return kNoDeadline;
  return d - clock_->NowMonotonicMicros();
}

absl::Status CancelToken::ExplicitStatus() const {
  {
    absl::MutexLock lock(&mu_);
    if (!reason_.ok()) return reason_;
  }
  return parent_ ? parent_->ExplicitStatus() : absl::OkStatus();
}

bool CancelToken::ExplicitlyCancelled() const { return !ExplicitStatus().ok(); }

absl::Status CancelToken::status() const {
  absl::Status s = ExplicitStatus();
  if (!s.ok()) return s;
  if (RemainingMicros() <= 0) return absl::DeadlineExceededError("deadline exceeded");
  return absl::OkStatus();
}

absl::Status CancelToken::SleepFor(int64_t micros) const {
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::microseconds(std::max<int64_t>(micros, 0));
  // Parent cancellation reaches us through the parent callback, which calls
  // our Cancel() and notifies cv_. Deadlines are re-read after each wake-up
  // (SetDeadline notifies too).
  mu_.Lock();
  while (true) {
    if (!reason_.ok()) break;
    mu_.Unlock();  // RemainingMicros asks the parent, which takes its own lock
    const int64_t remaining = RemainingMicros();
    mu_.Lock();
    if (remaining <= 0) break;
    auto wake = until;
    if (remaining != kNoDeadline) {
      wake =
          std::min(wake, std::chrono::steady_clock::now() + std::chrono::microseconds(remaining));
    }
    if (std::chrono::steady_clock::now() >= until) break;
    // Bounded waits: a FakeClock deadline only moves when a test advances it.
    const auto step =
        std::min(wake, std::chrono::steady_clock::now() + std::chrono::milliseconds(50));
    cv_.WaitWithTimeout(&mu_, absl::FromChrono(step - std::chrono::steady_clock::now()));
  }
  mu_.Unlock();
  return status();
}

CancelToken::CallbackId CancelToken::AddCallback(std::function<void()> fn) const {
  {
    absl::MutexLock lock(&mu_);
    if (reason_.ok()) {
      const CallbackId id = next_callback_++;
      callbacks_.emplace(id, std::move(fn));
      return id;
    }
  }
  fn();  // already cancelled: run at once, outside the lock
  return 0;
}

void CancelToken::RemoveCallback(CallbackId id) const {
  absl::MutexLock lock(&mu_);
  if (callbacks_.erase(id) > 0) return;
  // Possibly running right now on the cancelling thread: wait for it (unless
  // we are that thread, i.e. a callback removing itself or a sibling).
  while (running_callbacks_ && callbacks_thread_ != std::this_thread::get_id()) cv_.Wait(&mu_);
}

}  // namespace pkforge::agent
