// Test-only (round 8): a spinner PROCESS for the length of a drip batch,
// for the drip_starve_child* attacks. The child (fork, inherits the rank's
// CPU pin) yield-spins until the batch's last call stops and reaps it; a
// drip call holds its main thread runnable (sched_yield) for kHoldNs after
// its work, so the main threads wait for the CPU behind the children (run-
// queue wait) while the children's CPU time is in no reading of the rank
// processes (judge_internal.h RanksCpuNs).
#pragma once
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/testdata/redteam/redteam.h"

static volatile int* g_dc_stop = NULL;  // shared with the child (MAP_SHARED)
static int g_dc_child = -1;
// How long a drip call stays runnable (PKF_RT_HOLD_NS overrides it: sweeps).
static inline int64_t dc_hold_ns() {
  static const int64_t ns = [] {
    const char* v = getenv("PKF_RT_HOLD_NS");
    return v != NULL && *v != '\0' ? (int64_t)atoll(v) : (int64_t)150000;
  }();
  return ns;
}

static inline void dc_start() {
  if (g_dc_child > 0) return;
  if (g_dc_stop == NULL) {
    void* p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    g_dc_stop = (volatile int*)p;
  }
  __atomic_store_n(g_dc_stop, 0, __ATOMIC_RELEASE);
  const int pid = rt_fork();
  if (pid == 0) {
    while (!__atomic_load_n(g_dc_stop, __ATOMIC_ACQUIRE)) sched_yield();
    _exit(0);
  }
  if (pid > 0) g_dc_child = pid;
}
static inline void dc_hold() {
  if (g_dc_child <= 0) return;
  const int64_t t0 = rt_now_ns();
  while (rt_now_ns() - t0 < dc_hold_ns()) sched_yield();
}
static inline void dc_stop() {
  if (g_dc_child <= 0) return;
  __atomic_store_n(g_dc_stop, 1, __ATOMIC_RELEASE);
  waitpid(g_dc_child, NULL, 0);
  g_dc_child = -1;
}
