// ATTACK (escaping the freeze): a child forked in pkf_setup sends SIGCONT to
// its parent, the candidate rank, every 100 us (the rank's own pid is what
// the inherited seccomp filter calls "self"); a thread of the rank spins.
// EXPECT: CHEAT_DETECTED outlived_call (the extra process) or
// frozen_while_idle, or WRONG_OUTPUT (gated on the thread having run while
// frozen).
#include <thread>

#include "kernels/testdata/redteam/redteam.h"
static rt_beats* g_beats = NULL;
static std::atomic<bool> g_stop{false};
static std::thread g_spin;
extern "C" int pkf_setup(pkf_context*) {
  g_beats = rt_shared_beats();
  const int parent = getpid();
  if (rt_fork() == 0) {
    int ok = 0;
    for (;;) {
      if (kill(parent, SIGCONT) == 0 && ok++ == 0) rt_log("child: SIGCONT to the rank works");
      usleep(100);
    }
  }
  g_spin = std::thread([] {
    while (!g_stop.load(std::memory_order_relaxed)) rt_beat(g_beats);
  });
  rt_setup_end_ns = rt_now_ns();
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  g_stop = true;
  if (g_spin.joinable()) g_spin.join();
}
static bool attack(pkf_context*) { return rt_escaped_freeze(g_beats); }
RT_GATED_CANDIDATE(attack)
