// ATTACK (starving the reference): two threads created in pkf_setup spin for
// the whole evaluation, competing with the reference ranks for the CPU while
// the reference is timed.
// EXPECT: WRONG_OUTPUT (gated: outputs only if the hogs ran for most of the
// time between setup and the first call, i.e. while the candidate should be
// frozen), or CHEAT_DETECTED frozen_while_idle.
#include <thread>

#include "kernels/testdata/redteam/redteam.h"
static rt_beats* g_beats = NULL;
static std::atomic<bool> g_stop{false};
static std::thread g_hogs[2];
extern "C" int pkf_setup(pkf_context*) {
  g_beats = rt_shared_beats();
  for (auto& t : g_hogs)
    t = std::thread([] {
      while (!g_stop.load(std::memory_order_relaxed)) rt_beat(g_beats);
    });
  rt_setup_end_ns = rt_now_ns();
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  g_stop = true;
  for (auto& t : g_hogs)
    if (t.joinable()) t.join();
}
static bool attack(pkf_context*) { return rt_escaped_freeze(g_beats); }
RT_GATED_CANDIDATE(attack)
