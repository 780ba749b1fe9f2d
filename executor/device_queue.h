// DeviceQueue: who runs next, on which devices.
//
// Two resource kinds: GPUs (cuda evaluations need world_size of them, one
// evaluation per GPU at a time) and host slots (host evaluations; each takes
// one slot whatever its world size, so concurrent host runs stay few and
// their timings meaningful).
//
// Fairness: waiters are grouped by client key (the orchestrator's job id, or
// the peer address); groups are served round-robin and FIFO within a group,
// so one client submitting 100 candidates does not starve another's single
// one. The head waiter is never overtaken by a smaller request (no
// backfilling), so big evaluations cannot starve either.
//
// Health: MarkUnhealthy() takes a GPU out of the pool (with a reason, logged
// and shown by DescribeDevice); a GPU leased at that moment stays with its
// lease holder and simply never returns to the free set.
//
// Thread safety: every method may be called from any thread. Acquire()
// blocks the calling thread (an evaluation thread, never a gRPC reactor).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace pkforge::executor {

class DeviceQueue {
 public:
  struct GpuHealth {
    int index = 0;
    bool healthy = true;
    std::string reason;
  };

  // A grant; returns its devices when destroyed.
  class Lease {
   public:
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    const std::vector<int>& gpus() const { return gpus_; }  // empty for a host slot

   private:
    friend class DeviceQueue;
    Lease(DeviceQueue* queue, std::vector<int> gpus, bool host)
        : queue_(queue), gpus_(std::move(gpus)), host_(host) {}
    DeviceQueue* queue_;
    std::vector<int> gpus_;
    bool host_;
  };

  // Position 0 = next to run; called whenever it changes, only on the thread
  // that called Acquire() and only while that call waits (no lock held), so
  // it may capture that caller's locals.
  using PositionCallback = std::function<void(int position, int queue_length)>;

  DeviceQueue(std::vector<int> gpus, int host_slots);
  ~DeviceQueue();

  // Blocks until granted, `cancel` becomes true (CANCELLED) or Shutdown()
  // (UNAVAILABLE). gpu_count 0 means a host slot. FAILED_PRECONDITION when
  // more GPUs are asked than the pool holds healthy.
  absl::StatusOr<std::unique_ptr<Lease>> Acquire(int gpu_count, const std::string& client_key,
                                                 const PositionCallback& on_position,
                                                 const std::atomic<bool>* cancel);

  void MarkUnhealthy(int gpu, const std::string& reason);
  std::vector<GpuHealth> Health() const;
  int usable_gpus() const;
  int queue_length() const;
  // Fails every waiter and every later Acquire with UNAVAILABLE.
  void Shutdown();
  // Wakes waiters so they re-check their cancel flags (cheap; call after
  // setting one).
  void Poke();

 private:
  // A waiter's callback is never stored here: it belongs to the Acquire()
  // call that waits, and only that call's own thread runs it (with no lock
  // held), after reading the position NotifyPositionsLocked() left for it.
  // (Running other waiters' callbacks after unlocking let a callback outlive
  // the cancelled evaluation whose stack frame it captured: issue #15.)
  struct Waiter {
    uint64_t id;
    int gpu_count;
    std::string client;
    int position = -1;  // current, set under mu_
    int length = -1;
  };
  void Release(const std::vector<int>& gpus, bool host);
  // Fair order of all waiters.
  std::vector<const Waiter*> OrderLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Recomputes every waiter's position (each reports its own); wakes them.
  void NotifyPositionsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool FitsLocked(const Waiter& w) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int usable_gpus_locked_count() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // the queue changed (with mu_)
  std::map<int, GpuHealth> health_ ABSL_GUARDED_BY(mu_);
  std::vector<int> free_gpus_ ABSL_GUARDED_BY(mu_);
  int free_host_slots_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Per client FIFO, clients in round-robin order (rotated on every grant).
  std::list<std::string> client_order_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::list<Waiter>> waiting_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pkforge::executor
