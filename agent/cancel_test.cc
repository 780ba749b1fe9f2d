#include "agent/cancel.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "common/clock.h"
#include "gtest/gtest.h"

namespace pkforge::agent {
namespace {

TEST(CancelToken, CancelWakesSleeperWithReason) {
  CancelToken token;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    token.Cancel(absl::CancelledError("job cancelled by user"));
  });
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = token.SleepFor(10'000'000);
  canceller.join();
  EXPECT_LT(MsSince(start), 1000);
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(s.message(), "job cancelled by user");
  EXPECT_TRUE(token.ExplicitlyCancelled());
  token.Cancel(absl::InternalError("second reason is ignored"));
  EXPECT_EQ(token.status().message(), "job cancelled by user");
}

TEST(CancelToken, DeadlineEndsSleepAndReportsDeadlineExceeded) {
  CancelToken token;
  token.SetDeadline(SystemClock::Get()->NowMonotonicMicros() + 100'000);
  token.SetDeadline(SystemClock::Get()->NowMonotonicMicros() + 10'000'000);  // later: ignored
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = token.SleepFor(10'000'000);
  EXPECT_GE(MsSince(start), 90);
  EXPECT_LT(MsSince(start), 1000);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(token.ExplicitlyCancelled());
  EXPECT_LE(token.RemainingMicros(), 0);
}

TEST(CancelToken, ShortSleepWithoutCancelIsOk) {
  CancelToken token;
  EXPECT_TRUE(token.SleepFor(1000).ok());
  EXPECT_EQ(token.RemainingMicros(), CancelToken::kNoDeadline);
}

TEST(CancelToken, ChildFollowsParentButNotTheOtherWay) {
  CancelToken parent;
  parent.SetDeadline(SystemClock::Get()->NowMonotonicMicros() + 60'000'000);
  {
    CancelToken child(&parent);
    child.SetDeadline(SystemClock::Get()->NowMonotonicMicros() + 1'000'000);
    EXPECT_LE(child.RemainingMicros(), 1'000'000);
    EXPECT_GT(parent.RemainingMicros(), 1'000'000);  // the child's deadline stays its own
    child.Cancel(absl::CancelledError("child only"));
    EXPECT_FALSE(parent.IsCancelled());
  }
  CancelToken child2(&parent);
  std::atomic<bool> ran{false};
  child2.AddCallback([&] { ran = true; });
  parent.Cancel(absl::CancelledError("shutdown"));
  EXPECT_TRUE(ran);
  EXPECT_EQ(child2.status().message(), "shutdown");
  // A child made after the parent was cancelled starts cancelled.
  CancelToken child3(&parent);
  EXPECT_TRUE(child3.ExplicitlyCancelled());
}

TEST(CancelToken, CallbacksRunOnceAndCanBeRemoved) {
  CancelToken token;
  int a = 0, b = 0;
  auto ida = token.AddCallback([&] { ++a; });
  token.AddCallback([&] { ++b; });
  token.RemoveCallback(ida);
  token.Cancel();
  token.Cancel();
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 1);
  int c = 0;
  token.AddCallback([&] { ++c; });  // already cancelled: runs at once
  EXPECT_EQ(c, 1);
}

}  // namespace
}  // namespace pkforge::agent
