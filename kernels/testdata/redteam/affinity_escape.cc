// ATTACK (taking resources the reference is not given): the judge pins
// reference rank r and candidate rank r to one CPU (judge.cc RankCpus: both
// sides alike, the judge's CPU left out). The seccomp filter ignores
// sched_setaffinity aimed at other pids but lets pid 0 (the caller) through,
// so each candidate rank re-pins itself to every CPU of the machine,
// including the judge's: its ranks then run in parallel where the
// reference's share one CPU. Otherwise identical to control_direct_peer_read
// (the yardstick).
// EXPECT: the candidate keeps the CPU it was given (the affinity call has no
// effect, gated: WRONG_OUTPUT) or CHEAT_DETECTED; never OK at a speedup
// bought with CPUs the reference did not have.
#include <sched.h>

#include "kernels/testdata/redteam/direct.h"

static bool widen(pkf_context*) {
  cpu_set_t before, all, after;
  sched_getaffinity(0, sizeof before, &before);
  CPU_ZERO(&all);
  for (int c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
  const int rc = sched_setaffinity(0, sizeof all, &all);
  sched_getaffinity(0, sizeof after, &after);
  rt_log("affinity %d cpus -> %d cpus (rc %d)", CPU_COUNT(&before), CPU_COUNT(&after), rc);
  return CPU_COUNT(&after) > CPU_COUNT(&before);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int worked = -1;
  if (worked < 0) worked = widen(ctx) ? 1 : 0;
  int rc = 0;
  if (rt_direct_first(ctx, in, n_in, out, n_out, stream, &rc)) {
    // Gate: outputs only if every rank widened its CPU set (signal pad word 2).
    ((volatile uint32_t*)ctx->peer_flags[ctx->rank])[2] = worked ? 2u : 1u;
    ctx->barrier(ctx);
    return rc;
  }
  for (int32_t j = 0; j < ctx->world_size; ++j)
    if (((volatile uint32_t*)ctx->peer_flags[j])[2] != 2u) return 0;  // blocked: poison stays
  rt_direct_allreduce(ctx, in, out);
  return 0;
}
