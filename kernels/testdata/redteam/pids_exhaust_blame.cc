// ATTACK (round 7, blame, against b54dfb2): use up the task limit of the
// evaluation's cgroup (pids.max; the executor's run sandbox sets 4096 +
// bwrap's tasks) with idle helper threads, so that a TRUSTED process that
// creates a thread later fails.
//
// What the attacker read: rank.cc SelfDrip (the reference's own drip batch,
// batch_drip's baseline) starts a watcher with std::thread for every drip
// batch, long after the candidate's pkf_setup ran; nothing catches the
// std::system_error a failed clone throws, so the reference rank aborts and
// RankPool::Crash reports a reference that died: HARNESS_ERROR. Helper
// threads are allowed (candidate.h: idle between calls), and the thread
// baseline is taken after pkf_setup. So pkf_setup creates parked threads
// (16 KiB stacks, asleep on a futex) until pthread_create fails (EAGAIN),
// on every rank; the calls are the naive algorithm; pkf_teardown wakes and
// joins them (nothing left behind).
// Only meaningful under a task limit (the test makes a pids cgroup).
// EXPECT: never HARNESS_ERROR; the candidate's own verdict (OK, or
// RUNTIME_ERROR / SETUP_ERROR naming the candidate).
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>

#include <vector>

#include "kernels/testdata/redteam/redteam.h"

namespace {
std::atomic<uint32_t> g_go{0};
std::vector<pthread_t> g_threads;

void* Parked(void*) {
  while (g_go.load() == 0)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_go), FUTEX_WAIT, 0, nullptr, nullptr, 0);
  return nullptr;
}
}  // namespace

extern "C" int pkf_setup(pkf_context* ctx) {
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 16384);
  int err = 0;
  for (int i = 0; i < 100000; ++i) {
    pthread_t t;
    err = pthread_create(&t, &a, Parked, nullptr);
    if (err != 0) break;
    g_threads.push_back(t);
  }
  pthread_attr_destroy(&a);
  rt_log("rank %d: %zu parked threads, then pthread_create: %s", ctx->rank, g_threads.size(),
         strerror(err));
  return 0;
}

extern "C" void pkf_teardown(pkf_context*) {
  g_go.store(1);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_go), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
  for (pthread_t t : g_threads) pthread_join(t, nullptr);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
