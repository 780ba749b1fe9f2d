// ATTACK (escaping the freeze): a POSIX timer created in pkf_setup sends
// SIGCONT to the candidate's own process every 100 us, so a SIGSTOP freeze
// lasts microseconds; a thread created in pkf_setup spins (it would
// precompute or hog the CPU while the reference is timed).
// EXPECT: CHEAT_DETECTED frozen_while_idle, or WRONG_OUTPUT (gated: outputs
// only if the thread ran for most of the time between setup and the first
// call).
#include <thread>

#include "kernels/testdata/redteam/redteam.h"
static rt_beats* g_beats = NULL;
static std::atomic<bool> g_stop{false};
static std::thread g_spin;
static timer_t g_timer;
extern "C" int pkf_setup(pkf_context*) {
  g_beats = rt_shared_beats();
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_SIGNAL;
  sev.sigev_signo = SIGCONT;
  const int a = timer_create(CLOCK_MONOTONIC, &sev, &g_timer);
  struct itimerspec its = {{0, 100000}, {0, 100000}};
  const int b = timer_settime(g_timer, 0, &its, NULL);
  rt_log("timer_create %d timer_settime %d", a, b);
  g_spin = std::thread([] {
    while (!g_stop.load(std::memory_order_relaxed)) rt_beat(g_beats);
  });
  rt_setup_end_ns = rt_now_ns();
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  g_stop = true;
  if (g_spin.joinable()) g_spin.join();
  timer_delete(g_timer);
}
static bool attack(pkf_context*) { return rt_escaped_freeze(g_beats); }
RT_GATED_CANDIDATE(attack)
