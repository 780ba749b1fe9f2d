#include "kernels/harness/drip_hand_off.h"

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/harness/shm.h"

namespace pkforge::kernels {
namespace {

Reply Empty() {
  Reply r;
  std::memset(&r, 0, sizeof r);
  return r;
}

// The two halves on two threads over one word, as a rank and its watcher:
// every call released only after the previous one returned and was verified,
// in order; the watcher's reply carries the median gap and, for the judge's
// tail, when it saw the last return.
TEST(DripHandOff, CallsAreReleasedOneAtATimeAndTheReplySaysWhenTheLastReturned) {
  constexpr uint32_t kCalls = 12;
  DripWord w{};
  ArmDrip(&w);
  std::vector<uint32_t> started, verified;
  std::atomic<uint32_t> last_verified{0};
  bool early = false;
  const int64_t t0 = MonotonicNs();
  DripWatch watch;
  std::thread watcher([&] {
    watch = WatchDrip(
        &w, kCalls, 10'000, nullptr,
        [&](uint32_t k) {
          verified.push_back(k);
          last_verified.store(k + 1);
          return k != 5;  // call 5's outputs "do not match"
        },
        [&](uint32_t) {});
  });
  Reply calls = Empty();
  RunDripCalls(
      kCalls, &w,
      [&](uint32_t k) {
        // Call k starts only once call k - 1 was verified.
        if (k > 0 && last_verified.load() < k) early = true;
        started.push_back(k);
        return 0;
      },
      &calls);
  watcher.join();
  const int64_t t1 = MonotonicNs();
  EXPECT_EQ(calls.rc, 0) << calls.message;
  EXPECT_FALSE(early);
  ASSERT_EQ(started.size(), kCalls);
  ASSERT_EQ(verified.size(), kCalls);
  for (uint32_t k = 0; k < kCalls; ++k) EXPECT_EQ(started[k], k);
  EXPECT_EQ(watch.matched, kCalls - 1);
  EXPECT_EQ(watch.first_bad, 5);
  EXPECT_EQ(watch.gap_ns.size(), kCalls - 1);
  Reply r = Empty();
  FillDripReply(watch, &r);
  EXPECT_EQ(r.value, kCalls - 1);
  EXPECT_EQ(r.input_diff, 6u);  // 1 + the first call that did not match
  EXPECT_GE(r.t1_ns, t0);       // when the last return was seen
  EXPECT_LE(r.t1_ns, t1);
}

// A watcher that gives up (its time limit) aborts the calls; its reply says
// stopped (t1_ns = 1), which the judge holds against a candidate's reply.
TEST(DripHandOff, AWatcherThatGivesUpSaysStopped) {
  DripWord w{};
  ArmDrip(&w);
  DripWatch watch = WatchDrip(
      &w, 4, 1, nullptr, [](uint32_t) { return true; }, [](uint32_t) {});
  EXPECT_TRUE(watch.stopped);
  Reply r = Empty();
  FillDripReply(watch, &r);
  EXPECT_EQ(r.t1_ns, 1);
  Reply calls = Empty();
  RunDripCalls(
      4, &w, [](uint32_t) { return 0; }, &calls);
  EXPECT_EQ(calls.rc, -3) << calls.message;  // abandoned: the watcher gave up
}

// The reference's own drip batch: same calls, same watcher (a parked
// thread); its reply has no tail (t1_ns 0; the cuda rank puts its calls'
// median there).
TEST(DripHandOff, TheReferencesOwnDripReplyHasNoTail) {
  ParkedThread parked;
  DripWord w{};
  ArmDrip(&w);
  Reply rep = Empty();
  RunSelfDrip(
      &parked,
      [&] {
        return WatchDrip(
            &w, 10, 10'000, nullptr, [](uint32_t) { return true; }, [](uint32_t) {});
      },
      [&](Reply* c) {
        RunDripCalls(
            10, &w, [](uint32_t) { return 0; }, c);
      },
      &rep);
  EXPECT_EQ(rep.rc, 0) << rep.message;
  EXPECT_EQ(rep.value, 10u);
  EXPECT_EQ(rep.t1_ns, 0);
  EXPECT_GT(rep.t0_ns, 0);
}

}  // namespace
}  // namespace pkforge::kernels
