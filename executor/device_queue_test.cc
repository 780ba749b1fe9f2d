#include "executor/device_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace pkforge::executor {
namespace {

using namespace std::chrono_literals;

TEST(DeviceQueue, GrantsDistinctGpusAndReturnsThemOnRelease) {
  DeviceQueue q({0, 1, 2, 3}, 1);
  auto a = q.Acquire(2, "a", nullptr, nullptr);
  auto b = q.Acquire(2, "b", nullptr, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<int> all = (*a)->gpus();
  all.insert(all.end(), (*b)->gpus().begin(), (*b)->gpus().end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int>{0, 1, 2, 3}));
  a->reset();
  auto c = q.Acquire(2, "c", nullptr, nullptr);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->gpus().size(), 2u);
}

TEST(DeviceQueue, TooManyGpusIsFailedPrecondition) {
  DeviceQueue q({0, 1}, 1);
  auto r = q.Acquire(3, "a", nullptr, nullptr);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("world_size"), std::string::npos);
}

TEST(DeviceQueue, OneEvaluationPerGpuAtATime) {
  DeviceQueue q({0}, 1);
  std::atomic<int> running{0}, max_running{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&, i] {
      auto l = q.Acquire(1, "c" + std::to_string(i % 2), nullptr, nullptr);
      ASSERT_TRUE(l.ok());
      const int now = ++running;
      int prev = max_running.load();
      while (prev < now && !max_running.compare_exchange_weak(prev, now)) {}
      std::this_thread::sleep_for(5ms);
      --running;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(max_running.load(), 1);
}

TEST(DeviceQueue, ClientsAreServedRoundRobin) {
  DeviceQueue q({0}, 1);
  auto hold = q.Acquire(1, "holder", nullptr, nullptr);
  ASSERT_TRUE(hold.ok());
  std::mutex mu;
  std::vector<std::string> order;
  std::vector<std::thread> threads;
  // Client "busy" queues 4 evaluations before "quiet" queues 1.
  auto submit = [&](const std::string& client, int tag) {
    threads.emplace_back([&, client, tag] {
      auto l = q.Acquire(1, client, nullptr, nullptr);
      ASSERT_TRUE(l.ok());
      std::lock_guard lock(mu);
      order.push_back(client + std::to_string(tag));
    });
    // Wait until it is queued so arrival order is deterministic.
    while (q.queue_length() < static_cast<int>(threads.size())) std::this_thread::sleep_for(1ms);
  };
  for (int i = 0; i < 4; ++i) submit("busy", i);
  submit("quiet", 0);
  hold->reset();
  for (auto& t : threads) t.join();
  ASSERT_EQ(order.size(), 5u);
  // quiet runs second, not fifth.
  EXPECT_EQ(order[0], "busy0");
  EXPECT_EQ(order[1], "quiet0");
}

TEST(DeviceQueue, PositionsAreReportedAndCancelLeavesTheQueue) {
  DeviceQueue q({0}, 1);
  auto hold = q.Acquire(1, "h", nullptr, nullptr);
  std::atomic<int> last_pos{-1}, last_len{-1};
  std::atomic<bool> cancel{false};
  std::thread waiter([&] {
    auto l = q.Acquire(1, "w", [&](int p, int n) { last_pos = p; last_len = n; }, &cancel);
    EXPECT_EQ(l.status().code(), absl::StatusCode::kCancelled);
  });
  while (last_len.load() != 1) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(last_pos.load(), 0);
  cancel = true;
  q.Poke();
  waiter.join();
  EXPECT_EQ(q.queue_length(), 0);
}

TEST(DeviceQueue, HostSlotsAreIndependentOfGpus) {
  DeviceQueue q({0}, 2);
  auto g = q.Acquire(1, "a", nullptr, nullptr);
  auto h1 = q.Acquire(0, "b", nullptr, nullptr);
  auto h2 = q.Acquire(0, "c", nullptr, nullptr);
  ASSERT_TRUE(g.ok() && h1.ok() && h2.ok());
  EXPECT_TRUE((*h1)->gpus().empty());
}

TEST(DeviceQueue, UnhealthyGpuLeavesThePoolAndWaitersThatCannotFitFail) {
  DeviceQueue q({0, 1}, 1);
  auto hold = q.Acquire(1, "a", nullptr, nullptr);
  ASSERT_TRUE(hold.ok());
  const int held = (*hold)->gpus()[0];
  std::thread waiter([&] {
    auto l = q.Acquire(2, "b", nullptr, nullptr);
    EXPECT_EQ(l.status().code(), absl::StatusCode::kFailedPrecondition);
  });
  while (q.queue_length() < 1) std::this_thread::sleep_for(1ms);
  q.MarkUnhealthy(held, "test: health check failed");
  waiter.join();
  hold->reset();
  EXPECT_EQ(q.usable_gpus(), 1);
  auto health = q.Health();
  for (const auto& h : health)
    if (h.index == held) {
      EXPECT_FALSE(h.healthy);
      EXPECT_EQ(h.reason, "test: health check failed");
    }
  // The returned unhealthy GPU is never granted again.
  for (int i = 0; i < 3; ++i) {
    auto l = q.Acquire(1, "c", nullptr, nullptr);
    ASSERT_TRUE(l.ok());
    EXPECT_NE((*l)->gpus()[0], held);
  }
}

TEST(DeviceQueue, ShutdownFailsWaiters) {
  DeviceQueue q({0}, 1);
  auto hold = q.Acquire(1, "a", nullptr, nullptr);
  std::thread waiter([&] {
    auto l = q.Acquire(1, "b", nullptr, nullptr);
    EXPECT_EQ(l.status().code(), absl::StatusCode::kUnavailable);
  });
  while (q.queue_length() < 1) std::this_thread::sleep_for(1ms);
  q.Shutdown();
  waiter.join();
}

}  // namespace
}  // namespace pkforge::executor

namespace pkforge::executor {
namespace {

// Issue #15: a waiter's position callback captured its evaluation's stack
// frame and ran on *another* waiter's thread, after the lock was released,
// possibly after the owner had been cancelled and returned (executor
// segfault). Each callback must run only on its own waiter's thread while
// that waiter is still inside Acquire().
TEST(DeviceQueue, PositionCallbacksRunOnlyOnTheirOwnThreadWhileItWaits) {
  DeviceQueue q({}, 1);
  auto held = q.Acquire(0, "holder", nullptr, nullptr);
  ASSERT_TRUE(held.ok());
  constexpr int kN = 24;
  std::atomic<int> violations{0}, calls{0}, done{0};
  std::vector<std::atomic<bool>> cancel(kN);
  std::vector<std::thread> threads;
  for (int i = 0; i < kN; ++i) {
    threads.emplace_back([&, i] {
      struct Frame {
        std::thread::id owner = std::this_thread::get_id();
        std::atomic<bool> inside{true};
      } frame;
      auto cb = [&frame, &violations, &calls](int, int) {
        ++calls;
        if (std::this_thread::get_id() != frame.owner || !frame.inside) ++violations;
      };
      auto lease = q.Acquire(0, "client" + std::to_string(i % 5), cb, &cancel[i]);
      frame.inside = false;
      ++done;
      // The lease (if any) is returned here, letting the next waiter in.
    });
  }
  while (q.queue_length() < kN) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Cancellations in a burst: every remaining waiter's position changes
  // while cancelled waiters leave.
  for (int i = 0; i < kN; i += 2) cancel[i] = true;
  q.Poke();
  while (done < kN / 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  held->reset();  // the others now run one after another
  for (auto& t : threads) t.join();
  EXPECT_EQ(violations.load(), 0) << "a callback ran on another waiter's thread or after its return";
  EXPECT_GT(calls.load(), kN);
}

}  // namespace
}  // namespace pkforge::executor
