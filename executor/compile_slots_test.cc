#include "executor/compile_slots.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace pkforge::executor {
namespace {

// Waits until `n` threads are queued: the slots' queue is internal, so the
// test gives each waiter time to enqueue (behaviour, not a timing check:
// a slow machine only makes the wait longer).
void Settle() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

TEST(CompileSlots, TurnsGoRoundRobinBetweenClients) {
  CompileSlots slots(1);
  ASSERT_TRUE(slots.Acquire("first", nullptr));  // the slot is busy
  std::mutex mu;
  std::vector<std::string> granted;
  std::vector<std::thread> threads;
  auto wait_for = [&](const std::string& client, const std::string& name) {
    threads.emplace_back([&, client, name] {
      ASSERT_TRUE(slots.Acquire(client, nullptr));
      {
        std::lock_guard<std::mutex> l(mu);
        granted.push_back(name);
      }
      slots.Release();
    });
    Settle();
  };
  // One client queues three compiles, then another client one.
  wait_for("burner", "b1");
  wait_for("burner", "b2");
  wait_for("burner", "b3");
  wait_for("honest", "h1");
  slots.Release();
  for (std::thread& t : threads) t.join();
  // The honest client's compile comes second, not fourth.
  EXPECT_EQ(granted, (std::vector<std::string>{"b1", "h1", "b2", "b3"}));
}

TEST(CompileSlots, ACancelledWaiterLeavesTheQueueAndHoldsNothing) {
  CompileSlots slots(1);
  ASSERT_TRUE(slots.Acquire("a", nullptr));
  std::atomic<bool> cancel{false};
  bool got = true;
  std::thread waiter([&] { got = slots.Acquire("b", &cancel); });
  Settle();
  cancel = true;
  waiter.join();
  EXPECT_FALSE(got);
  slots.Release();
  // The slot is free for anyone: nothing was left holding it or queued.
  EXPECT_TRUE(slots.Acquire("c", nullptr));
  slots.Release();
}

TEST(CompileSlots, SeveralSlotsServeSeveralAtOnce) {
  CompileSlots slots(2);
  EXPECT_TRUE(slots.Acquire("a", nullptr));
  EXPECT_TRUE(slots.Acquire("a", nullptr));
  std::atomic<bool> third{false};
  std::thread t([&] {
    third = slots.Acquire("b", nullptr);
  });
  Settle();
  EXPECT_FALSE(third.load());  // both slots busy
  slots.Release();
  t.join();
  EXPECT_TRUE(third.load());
  slots.Release();
  slots.Release();
}

}  // namespace
}  // namespace pkforge::executor
