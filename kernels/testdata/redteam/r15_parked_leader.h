// Red team round 15: the rank's harness moved off the thread-group leader.
// rt15_park_leader(), called from pkf_setup on the leader, saves the
// harness's context there (swapcontext), parks the leader on a private stack
// in a futex wait with every signal blocked (no handler may ever run on it),
// and lets a thread created here resume the saved context on the leader's
// own stack: it returns from pkf_setup and runs the harness's command loop,
// every pkf_run included, for the rest of the evaluation. The leader's CPU
// time never grows again. (zombie_rank moves the harness the same way, to
// hide the rank from the freeze; here the leader stays alive and frozen
// like any thread.)
#pragma once

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "kernels/testdata/redteam/redteam.h"

namespace rt15 {
inline ucontext_t g_harness;  // the leader inside pkf_setup: the harness's context
inline ucontext_t g_park;     // the leader's parking place
inline uint32_t g_go = 0;     // set once g_harness is saved
inline uint32_t g_forever = 0;
alignas(64) inline char g_park_stack[64 * 1024];
inline pthread_t g_runner;

inline void Park() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  __atomic_store_n(&g_go, 1, __ATOMIC_RELEASE);
  syscall(SYS_futex, &g_go, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  for (;;) syscall(SYS_futex, &g_forever, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
}

inline void* Runner(void*) {
  while (__atomic_load_n(&g_go, __ATOMIC_ACQUIRE) == 0)
    syscall(SYS_futex, &g_go, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
  setcontext(&g_harness);  // back into pkf_setup's frame, on the leader's stack
  return nullptr;
}
}  // namespace rt15

// Returns on the runner thread (or, if no thread could be made, on the leader).
static inline void rt15_park_leader(int rank) {
  const int leader = (int)syscall(SYS_gettid);
  getcontext(&rt15::g_park);
  rt15::g_park.uc_stack.ss_sp = rt15::g_park_stack;
  rt15::g_park.uc_stack.ss_size = sizeof rt15::g_park_stack;
  rt15::g_park.uc_link = nullptr;
  makecontext(&rt15::g_park, rt15::Park, 0);
  if (pthread_create(&rt15::g_runner, nullptr, rt15::Runner, nullptr) != 0) return;
  swapcontext(&rt15::g_harness, &rt15::g_park);
  rt_log("rank %d: harness moved from the leader (tid %d) to tid %d", rank, leader,
         (int)syscall(SYS_gettid));
}
