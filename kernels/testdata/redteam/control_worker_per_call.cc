// BENIGN CONTROL (round 7): every call is done by one worker thread of the
// rank (started in pkf_setup, idle between calls), one call at a time, with
// control_flag_epoch's honest barrier-free algorithm; the rank's main thread
// hands the call over and sleeps on a futex until the worker is done. A
// legitimate design (helper threads are allowed): it must not be convicted.
// Its main threads hardly run (probes: main_idle) and never wait for a CPU
// in timed batches (drip batches: "starved" against that baseline), so the
// anti-amortization checks mostly see nothing here - which is fine for an
// honest candidate and is why worker_turns_fuse hides behind the same shape.
// EXPECT: OK.
#include <linux/futex.h>
#include <sys/syscall.h>

#include <thread>

#include "kernels/testdata/redteam/probe_dodge.h"

namespace {
struct Job {
  std::atomic<uint32_t> seq{0}, done{0};
  std::atomic<bool> stop{false};
  pkf_context* ctx = nullptr;
  const pkf_tensor* in = nullptr;
  pkf_tensor* out = nullptr;
  int rc = 0;
  std::thread th;
} g_job;
long Futex(std::atomic<uint32_t>* w, int op, uint32_t v) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), op, v, nullptr, nullptr, 0);
}
void Loop() {
  uint32_t seen = 0;
  for (;;) {
    uint32_t s;
    while ((s = g_job.seq.load(std::memory_order_acquire)) == seen) {
      if (g_job.stop.load()) return;
      Futex(&g_job.seq, FUTEX_WAIT, seen);
    }
    if (g_job.stop.load()) return;
    seen = s;
    g_job.rc = rt_epoch_call(g_job.ctx, g_job.in, g_job.out);
    g_job.done.store(seen, std::memory_order_release);
    Futex(&g_job.done, FUTEX_WAKE, 1);
  }
}
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  g_job.th = std::thread(Loop);
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  g_job.stop.store(true);
  g_job.seq.fetch_add(1);
  Futex(&g_job.seq, FUTEX_WAKE, 1);
  if (g_job.th.joinable()) g_job.th.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  g_job.ctx = ctx;
  g_job.in = in;
  g_job.out = out;
  const uint32_t s = g_job.seq.fetch_add(1, std::memory_order_acq_rel) + 1;
  Futex(&g_job.seq, FUTEX_WAKE, 1);
  uint32_t d;
  while ((d = g_job.done.load(std::memory_order_acquire)) != s) Futex(&g_job.done, FUTEX_WAIT, d);
  return g_job.rc;
}
