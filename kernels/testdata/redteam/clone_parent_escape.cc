// ATTACK (escaping the freeze / containment): clone(CLONE_PARENT) in
// pkf_setup: the child becomes a child of the judge, a sibling of the ranks,
// outside the candidate rank's process tree; it spins and beats into shared
// memory for the whole evaluation and never exits.
// EXPECT: CHEAT_DETECTED outlived_call, frozen_while_idle or leftover_process,
// or WRONG_OUTPUT (gated on the child having run while the candidate should
// be frozen); nothing left alive.
#include <sched.h>

#include "kernels/testdata/redteam/redteam.h"
static rt_beats* g_beats = NULL;
extern "C" int pkf_setup(pkf_context*) {
  g_beats = rt_shared_beats();
  const long c = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
  if (c == 0) {
    rt_record_pid(getpid());
    for (;;) rt_beat(g_beats);
  }
  rt_log("clone(CLONE_PARENT) = %ld", c);
  rt_setup_end_ns = rt_now_ns();
  return 0;
}
static bool attack(pkf_context*) { return rt_escaped_freeze(g_beats); }
RT_GATED_CANDIDATE(attack)
