#include "executor/device_queue.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "spdlog/spdlog.h"

namespace pkforge::executor {

DeviceQueue::Lease::~Lease() { queue_->Release(gpus_, host_); }

DeviceQueue::DeviceQueue(std::vector<int> gpus, int host_slots)
    : free_gpus_(gpus), free_host_slots_(host_slots) {
  for (int g : gpus) health_[g] = GpuHealth{g, true, ""};
}

DeviceQueue::~DeviceQueue() { Shutdown(); }

std::vector<const DeviceQueue::Waiter*> DeviceQueue::OrderLocked() const {
  std::vector<const Waiter*> order;
  for (size_t round = 0;; ++round) {
    bool any = false;
    for (const std::string& client : client_order_) {
      auto it = waiting_.find(client);
      if (it == waiting_.end() || it->second.size() <= round) continue;
      any = true;
      order.push_back(&*std::next(it->second.begin(), static_cast<long>(round)));
    }
    if (!any) break;
  }
  return order;
}

bool DeviceQueue::FitsLocked(const Waiter& w) const {
  if (w.gpu_count == 0) return free_host_slots_ > 0;
  int free_healthy = 0;
  for (int g : free_gpus_)
    if (health_.at(g).healthy) ++free_healthy;
  return free_healthy >= w.gpu_count;
}

void DeviceQueue::NotifyPositionsLocked() {
  int gpu_pos = 0, host_pos = 0, gpu_len = 0, host_len = 0;
  const auto order = OrderLocked();
  for (const Waiter* w : order) (w->gpu_count == 0 ? host_len : gpu_len)++;
  bool changed = false;
  for (const Waiter* cw : order) {
    Waiter* w = const_cast<Waiter*>(cw);
    const bool host = w->gpu_count == 0;
    const int pos = host ? host_pos++ : gpu_pos++;
    const int len = host ? host_len : gpu_len;
    changed = changed || pos != w->position || len != w->length;
    w->position = pos;
    w->length = len;
  }
  if (changed) cv_.SignalAll();
}

absl::StatusOr<std::unique_ptr<DeviceQueue::Lease>> DeviceQueue::Acquire(
    int gpu_count, const std::string& client_key, const PositionCallback& on_position,
    const std::atomic<bool>* cancel) {
  absl::MutexLock lock(&mu_);
  if (shutdown_) return absl::UnavailableError("executor is shutting down");
  if (gpu_count > 0 && gpu_count > usable_gpus_locked_count()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "world_size: ", gpu_count, " GPUs asked, ", usable_gpus_locked_count(),
        " healthy GPUs in this executor's pool"));
  }
  const uint64_t id = next_id_++;
  if (waiting_.find(client_key) == waiting_.end() || waiting_[client_key].empty())
    client_order_.push_back(client_key);
  waiting_[client_key].push_back(Waiter{id, gpu_count, client_key});
  auto remove_me = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto& q = waiting_[client_key];
    q.remove_if([id](const Waiter& w) { return w.id == id; });
    if (q.empty()) {
      waiting_.erase(client_key);
      client_order_.remove(client_key);
    }
  };
  // Reports this waiter's own position when it changed: the callback runs
  // on this thread, inside this call, so whatever it captured is alive.
  int reported_position = -1, reported_length = -1;
  auto report = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = waiting_.find(client_key);
    if (it == waiting_.end() || !on_position) return;
    for (const Waiter& w : it->second) {
      if (w.id != id) continue;
      if (w.position == reported_position && w.length == reported_length) return;
      reported_position = w.position;
      reported_length = w.length;
      const int pos = w.position, len = w.length;
      mu_.Unlock();
      on_position(pos, len);
      mu_.Lock();
      return;
    }
  };
  NotifyPositionsLocked();
  for (;;) {
    report();
    if (cancel != nullptr && cancel->load()) {
      remove_me();
      NotifyPositionsLocked();
      cv_.SignalAll();
      return absl::CancelledError("cancelled while queued");
    }
    if (shutdown_) {
      remove_me();
      return absl::UnavailableError("executor is shutting down");
    }
    if (gpu_count > 0 && gpu_count > usable_gpus_locked_count()) {
      remove_me();
      NotifyPositionsLocked();
      cv_.SignalAll();
      return absl::FailedPreconditionError(absl::StrCat(
          "world_size: ", gpu_count, " GPUs asked, but GPUs left the pool while queued"));
    }
    // The head of this kind's fair order, if it fits, is granted.
    const Waiter* head = nullptr;
    for (const Waiter* w : OrderLocked()) {
      if ((w->gpu_count == 0) == (gpu_count == 0)) {
        head = w;
        break;
      }
    }
    if (head != nullptr && head->id == id && FitsLocked(*head)) {
      std::vector<int> granted;
      if (gpu_count == 0) {
        --free_host_slots_;
      } else {
        std::sort(free_gpus_.begin(), free_gpus_.end());
        for (auto it = free_gpus_.begin(); it != free_gpus_.end() &&
                                           static_cast<int>(granted.size()) < gpu_count;) {
          if (health_.at(*it).healthy) {
            granted.push_back(*it);
            it = free_gpus_.erase(it);
          } else {
            ++it;
          }
        }
      }
      remove_me();
      // Round-robin: the client just served goes to the back.
      if (waiting_.count(client_key) > 0) {
        client_order_.remove(client_key);
        client_order_.push_back(client_key);
      }
      NotifyPositionsLocked();
      cv_.SignalAll();
      return std::unique_ptr<Lease>(new Lease(this, std::move(granted), gpu_count == 0));
    }
    cv_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
  }
}

void DeviceQueue::Release(const std::vector<int>& gpus, bool host) {
  {
    absl::MutexLock lock(&mu_);
    if (host) ++free_host_slots_;
    for (int g : gpus) free_gpus_.push_back(g);
  }
  cv_.SignalAll();
}

void DeviceQueue::MarkUnhealthy(int gpu, const std::string& reason) {
  {
    absl::MutexLock lock(&mu_);
    auto it = health_.find(gpu);
    if (it == health_.end()) return;
    it->second.healthy = false;
    it->second.reason = reason;
  }
  spdlog::error("GPU {} taken out of the pool: {}", gpu, reason);
  cv_.SignalAll();
}

std::vector<DeviceQueue::GpuHealth> DeviceQueue::Health() const {
  absl::MutexLock lock(&mu_);
  std::vector<GpuHealth> out;
  for (const auto& [g, h] : health_) out.push_back(h);
  return out;
}

int DeviceQueue::usable_gpus_locked_count() const {
  int n = 0;
  for (const auto& [g, h] : health_) n += h.healthy ? 1 : 0;
  return n;
}

int DeviceQueue::usable_gpus() const {
  absl::MutexLock lock(&mu_);
  return usable_gpus_locked_count();
}

int DeviceQueue::queue_length() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& [c, q] : waiting_) n += static_cast<int>(q.size());
  return n;
}

void DeviceQueue::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shutdown_ = true;
  }
  cv_.SignalAll();
}

void DeviceQueue::Poke() { cv_.SignalAll(); }

}  // namespace pkforge::executor
