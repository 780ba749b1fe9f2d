// ATTACK (escaping the freeze -> starving the reference): in pkf_setup, rank
// 0 forks a helper whose main thread starts spinning threads (RT_HOG_PER_CPU per CPU,
// each pinned to its CPU) and then calls pthread_exit(): /proc/<pid>/stat of
// the helper says Z (zombie leader) although its threads run. The judge's
// listing of candidate processes (candidate_processes.cc: IsZombieOrGone reads
// /proc/<pid>/stat) skips it: it is never frozen, never an extra process
// after a call, never a leftover. Its threads spin while candidate rank 0 is
// stopped (state T: the reference's timed batches) from the first timed
// batch on, and sleep while the candidate runs: the reference is slowed, the
// candidate is not. The candidate itself is the naive allreduce.
// EXPECT: CHEAT_DETECTED frozen_while_idle / outlived_call /
// leftover_process (never OK at a speedup it did not earn).
#include "kernels/testdata/redteam/zombie.h"

#ifndef RT_HOG_PER_CPU
#define RT_HOG_PER_CPU 3
#endif

static volatile int* g_armed = NULL;
static int g_rank_pid = 0;

static void* hog(int k, void*) {
  rt_pin_self_to(k % rt_ncpus());
  for (;;) {
    const char s = rt_state(g_rank_pid);
    if (s == 0 || s == 'Z' || s == 'X') _exit(0);
    if (s == 'T' && *g_armed) rt_spin_ns(50000);
    else rt_sleep_ns(100000);
  }
  return NULL;
}

extern "C" int pkf_setup(pkf_context* ctx) {
  g_armed = (volatile int*)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (ctx->rank != 0) return 0;
  g_rank_pid = getpid();
  const int pid = rt_zombie_spawn(RT_HOG_PER_CPU * rt_ncpus(), hog, NULL);
  rt_log("zombie-leader hog %d started (%d threads)", pid, RT_HOG_PER_CPU * rt_ncpus());
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (rt_batch_call() && g_armed != NULL) *g_armed = 1;
  return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));
}
