#include "kernels/harness/drip_hand_off.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "kernels/harness/shm.h"

namespace pkforge::kernels {

ParkedThread::ParkedThread() : t_([this] { Loop(); }) {}

ParkedThread::~ParkedThread() {
  {
    std::lock_guard<std::mutex> l(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  t_.join();
}

void ParkedThread::Run(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> l(mu_);
    job_ = std::move(job);
    done_ = false;
  }
  cv_.notify_all();
}

void ParkedThread::Wait() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return done_; });
}

void ParkedThread::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return quit_ || job_ != nullptr; });
    if (quit_) return;
    std::function<void()> job = std::move(job_);
    job_ = nullptr;
    l.unlock();
    job();
    l.lock();
    done_ = true;
    cv_.notify_all();
  }
}

void ArmDrip(DripWord* w) {
  w->returned.store(0, std::memory_order_relaxed);
  w->released.store(kDripLead, std::memory_order_release);
}

void RunDripCalls(uint32_t n, DripWord* w, const std::function<int(uint32_t)>& call, Reply* rep) {
  for (uint32_t k = 0; k < n; ++k) {
    for (;;) {
      const uint32_t r = w->released.load(std::memory_order_acquire);
      if (r == kDripAbort) {
        rep->rc = -3;
        snprintf(rep->message, sizeof rep->message, "drip batch abandoned before call %u", k);
        return;
      }
      if (r > k) break;
      WaitWhileEquals(&w->released, r, 50'000'000);
    }
    rep->rc = call(k);
    if (rep->rc != 0) {
      w->returned.store(kDripAbort, std::memory_order_release);
      WakeAll(&w->returned);
      snprintf(rep->message, sizeof rep->message, "pkf_run returned %d (call %u of a drip batch)",
               rep->rc, k);
      return;
    }
    w->returned.store(k + 1, std::memory_order_release);
    WakeAll(&w->returned);
  }
}

namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

bool PinThisThread(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t want;
  CPU_ZERO(&want);
  CPU_SET(cpu, &want);
  if (sched_setaffinity(0, sizeof want, &want) != 0) return false;
  // Read back: under the candidate's seccomp filter (which the reference
  // ranks load too) sched_setaffinity "succeeds" and does nothing.
  cpu_set_t now;
  CPU_ZERO(&now);
  return sched_getaffinity(0, sizeof now, &now) == 0 && CPU_EQUAL(&now, &want);
}

DripWatch WatchDrip(DripWord* w, uint32_t n, int64_t limit_ms, const std::atomic<uint32_t>* stop,
                    const std::function<bool(uint32_t)>& verify,
                    const std::function<void(uint32_t)>& release, DripWait how) {
  DripWatch d;
  const bool spin = how != DripWait::kFutex;
  const bool yield = how == DripWait::kSpinYield;
  const int64_t deadline = MonotonicNs() + limit_ms * 1'000'000;
  int64_t t_prev = 0;
  for (uint32_t k = 0; k < n; ++k) {
    for (;;) {
      uint32_t r = w->returned.load(std::memory_order_acquire);
      const bool stopped = stop != nullptr && stop->load(std::memory_order_acquire) != 0;
      if (stopped) r = w->returned.load(std::memory_order_acquire);
      if (r != kDripAbort && r > k) break;
      if (r == kDripAbort || stopped || MonotonicNs() > deadline) {
        d.stopped = true;
        w->released.store(kDripAbort, std::memory_order_release);
        WakeAll(&w->released);
        return d;
      }
      if (!spin) {
        WaitWhileEquals(&w->returned, r, 10'000'000);
      } else if (yield) {
        sched_yield();
      } else {
        CpuRelax();
      }
    }
    const int64_t t_obs = MonotonicNs();
    if (k >= 1) d.gap_ns.push_back(t_obs - t_prev);
    t_prev = t_obs;
    d.last_ns = t_obs;
    if (verify(k))
      ++d.matched;
    else if (d.first_bad < 0)
      d.first_bad = k;
    if (k + kDripLead < n) {
      release(k + kDripLead);
      w->released.store(k + kDripLead + 1, std::memory_order_release);
      if (!spin) WakeAll(&w->released);
    }
  }
  return d;
}

void RunSelfDrip(ParkedThread* watcher, const std::function<DripWatch()>& watch,
                 const std::function<void(Reply*)>& calls, Reply* rep) {
  DripWatch d;
  watcher->Run([&] { d = watch(); });
  Reply c;
  std::memset(&c, 0, sizeof c);
  calls(&c);
  watcher->Wait();
  FillDripReply(d, rep);
  rep->t1_ns = 0;  // the reference's own drip reply: no tail (protocol.h)
  if (c.rc != 0 || d.stopped) {
    rep->rc = kRcHarness;
    snprintf(rep->message, sizeof rep->message, "the reference's drip batch failed: %.200s",
             c.rc != 0 ? c.message : "its watcher stopped");
  }
}

void FillDripReply(const DripWatch& d, Reply* rep) {
  rep->value = d.matched;
  rep->input_diff = d.first_bad < 0 ? 0 : static_cast<uint64_t>(d.first_bad) + 1;
  std::vector<int64_t> s = d.gap_ns;
  if (!s.empty()) {
    std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(s.size() / 2), s.end());
    rep->t0_ns = s[s.size() / 2];
  }
  // Stopped early: t1_ns = 1 (the candidate's doing when it watched the
  // candidate: never an error of this reference rank); else when the last
  // return was seen, for the judge's tail (the time from it to the calls'
  // reply).
  rep->t1_ns = d.stopped ? 1 : std::max<int64_t>(d.last_ns, 2);
}

}  // namespace pkforge::kernels
