// CompileSlots: at most N compiler processes at once, handed out round-robin
// between the clients waiting for one.
//
// A client that queued many compiles (each a source that burns its whole
// compile limit: red team round 18 r18_compile_burn) takes one slot in its
// turn, then every other waiting client gets one before it gets the next:
// the same fairness as the device queue (device_queue.h). Within a client,
// first come, first served.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace pkforge::executor {

class CompileSlots {
 public:
  explicit CompileSlots(int slots) : free_(slots < 1 ? 1 : slots) {}

  // Blocks until `client` is given a slot; false (nothing held) once
  // `cancel` reads true (polled every 100 ms).
  bool Acquire(const std::string& client, const std::atomic<bool>* cancel) {
    absl::MutexLock lock(&mu_);
    const uint64_t ticket = next_ticket_++;
    std::deque<uint64_t>& mine = waiting_[client];
    if (mine.empty()) order_.push_back(client);
    mine.push_back(ticket);
    while (!MyTurn(client, ticket)) {
      if (cancel != nullptr && cancel->load()) {
        Forget(client, ticket);
        return false;
      }
      changed_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
    }
    --free_;
    std::deque<uint64_t>& q = waiting_[client];
    q.pop_front();
    order_.pop_front();
    if (q.empty()) waiting_.erase(client);
    else order_.push_back(client);  // its next compile after every other client's
    changed_.SignalAll();
    return true;
  }

  void Release() {
    absl::MutexLock lock(&mu_);
    ++free_;
    changed_.SignalAll();
  }

 private:
  // A free slot, this client's turn, and this ticket its oldest.
  bool MyTurn(const std::string& client, uint64_t ticket) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (free_ <= 0 || order_.empty() || order_.front() != client) return false;
    const auto it = waiting_.find(client);
    return it != waiting_.end() && !it->second.empty() && it->second.front() == ticket;
  }
  void Forget(const std::string& client, uint64_t ticket) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::deque<uint64_t>& q = waiting_[client];
    for (auto it = q.begin(); it != q.end(); ++it)
      if (*it == ticket) {
        q.erase(it);
        break;
      }
    if (q.empty()) {
      waiting_.erase(client);
      for (auto it = order_.begin(); it != order_.end(); ++it)
        if (*it == client) {
          order_.erase(it);
          break;
        }
    }
    changed_.SignalAll();
  }

  absl::Mutex mu_;
  absl::CondVar changed_;
  int free_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 0;
  // Clients with a waiting compile, in turn order; each one's tickets.
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::deque<uint64_t>> waiting_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pkforge::executor
