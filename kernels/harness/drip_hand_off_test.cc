#include "kernels/harness/drip_hand_off.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/harness/containment.h"
#include "kernels/harness/rank_pool.h"
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

// A queued cuda drip batch's GPU waits for released >= k + 1 with a cyclic
// comparison ((int32_t)(*word - value) >= 0, cuStreamWaitValue32 GEQ): a
// watcher that gives up must end every such wait, or the calls' side never
// drains (0xffffffff, the old value, ends none of them).
TEST(DripHandOff, TheAbortValueEndsEveryQueuedWait) {
  for (uint32_t k = 0; k <= kDripCalls + kDripLead; ++k)
    EXPECT_GE(static_cast<int32_t>(kDripAbort - (k + 1)), 0) << "call " << k;
  EXPECT_GT(kDripAbort, kDripCalls + kDripLead);  // never a count of calls
}

// A spinning watcher (DripWait::kSpin, the queued cuda batches): returns
// that nobody wakes it for (the GPU writes `returned`) are seen at once, not
// after a futex time-out (10 ms each); kSpinYield the same. What is judged
// is each return's latency, from the "GPU" storing it to the watcher's
// verify seeing it, so the GPU side's own delays under load do not count
// (CI's 2 cores beside another test: the median gap between returns, the
// first version of this test, read 5-8 ms for a spinner there). The futex
// watcher, run the same way, is the control: asleep before each store (1 ms
// after the release), it sees the return only at its time-out. As in the
// cuda rank, kSpin runs on a CPU of its own (the "GPU" on another),
// kSpinYield where there is none: a pure spinner sharing its CPU would hold
// it for a time slice.
TEST(DripHandOff, ASpinningWatcherSeesUnwokenReturns) {
  const std::vector<int> cpus = AllowedCpus();
  const bool two = cpus.size() >= 2;
  auto median_latency = [&](DripWait how) -> int64_t {
    constexpr uint32_t kCalls = 16;
    DripWord w{};
    ArmDrip(&w);
    std::vector<int64_t> stored(kCalls), seen(kCalls);
    DripWatch watch;
    std::thread watcher([&] {
      if (two) PinThisThread(cpus[0]);
      watch = WatchDrip(
          &w, kCalls, 10'000, nullptr,
          [&](uint32_t k) {
            seen[k] = MonotonicNs();
            return true;
          },
          [](uint32_t) {}, how);
    });
    // The "GPU": returns stored without a wake, each once its call was
    // released.
    std::thread gpu([&] {
      if (two) PinThisThread(cpus[1]);
      for (uint32_t k = 0; k < kCalls; ++k) {
        while (w.released.load(std::memory_order_acquire) <= k) std::this_thread::yield();
        // Late enough that a futex sleeper is already asleep.
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        stored[k] = MonotonicNs();
        w.returned.store(k + 1, std::memory_order_release);
      }
    });
    gpu.join();
    watcher.join();
    EXPECT_FALSE(watch.stopped) << static_cast<int>(how);
    EXPECT_EQ(watch.matched, kCalls) << static_cast<int>(how);
    std::vector<int64_t> lat;
    for (uint32_t k = 0; k < kCalls; ++k) lat.push_back(seen[k] - stored[k]);
    std::nth_element(lat.begin(), lat.begin() + lat.size() / 2, lat.end());
    return lat[lat.size() / 2];
  };
  constexpr int64_t kBound = 4'500'000;  // ns: half the futex watcher's time-out left
  const int64_t futex = median_latency(DripWait::kFutex);
  EXPECT_GT(futex, kBound) << "control: the futex watcher saw unwoken returns before its time-out";
  std::vector<DripWait> spinners{DripWait::kSpinYield};
  if (two) spinners.push_back(DripWait::kSpin);
  for (DripWait how : spinners) EXPECT_LT(median_latency(how), kBound) << static_cast<int>(how);
}

// The spinning watcher's CPU: PinThisThread pins and says so; under the
// candidate's seccomp filter (which the cuda reference ranks load too)
// sched_setaffinity "succeeds" and does nothing, which it must report,
// so the cuda rank pins its watcher before loading the filter (red team
// round 32: a watcher that believed itself moved spun on the pair's CPU).
TEST(DripHandOff, PinningAThreadIsReadBackAndTheFilterMakesItANoOp) {
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.size() < 2) GTEST_SKIP() << "fewer than two CPUs allowed";
  std::thread([&] { EXPECT_TRUE(PinThisThread(cpus[1])); }).join();
  EXPECT_FALSE(PinThisThread(-1));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!LoadCandidateSeccompFilter(false, false, false).ok()) _exit(2);
    _exit(PinThisThread(cpus[1]) ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the filtered pin read as done; 2: no filter";
}

// Where the judge puts the ranks and the queued drip watchers: pairs after
// the judge's CPU, watchers after the pairs, none where no CPU is left.
TEST(DripHandOff, WatchersGetCpusOfTheirOwnAfterThePairs) {
  std::vector<int> sixteen;
  for (int c = 0; c < 16; ++c) sixteen.push_back(c);
  EXPECT_EQ(RankCpus(sixteen, 1), std::vector<int>({1}));
  EXPECT_EQ(WatcherCpus(sixteen, 1), std::vector<int>({2}));
  EXPECT_EQ(RankCpus(sixteen, 8), std::vector<int>({1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(WatcherCpus(sixteen, 8), std::vector<int>({9, 10, 11, 12, 13, 14, 15, -1}));
  EXPECT_EQ(RankCpus({0, 1}, 1), std::vector<int>({1}));
  EXPECT_EQ(WatcherCpus({0, 1}, 1), std::vector<int>({-1}));
  EXPECT_EQ(RankCpus({5}, 2), std::vector<int>({5, 5}));
  EXPECT_EQ(WatcherCpus({5}, 2), std::vector<int>({-1, -1}));
  EXPECT_EQ(WatcherCpus({3, 7, 9}, 1), std::vector<int>({9}));
}

}  // namespace
}  // namespace pkforge::kernels
