// ATTACK (round 13, helper-redteam13, against the lead's timing_schedule
// working tree on ee94786): make every progress probe of a fused batch
// inconclusive by keeping the judge off the CPUs while it should stop the
// candidate, then fuse every batch.
// What the attacker read: rank_pool.cc CandPausedRound sleeps in ppoll until
// the secret pause point and only then sends the stop; judge_timing.cc
// ProgressProbe calls the probe inconclusive when the stop was sent over a
// quarter of the fastest span after that point (late_stop), or when every
// rank had replied by then (replies_pending false); progress_probe.cc /
// checks.cc BatchProgress: no conclusive probe = "not judged", a pass
// unless a probe was starved (no flag, so the median stays the official
// time); the schedule's extension only adds probes of the same kind.
// The scheduler (EEVDF, RUN_TO_PARITY): a task that wakes (the judge, at
// the pause point) does not preempt a CPU-bound task that has not used up
// its slice (~0.75-3 ms); it waits until one sleeps, blocks or yields.
// So: on a fused batch no rank ever yields. Every long and short batch is
// one epoch exchange for all its calls (inputs of the whole batch copied
// into the scratch, results kept privately and copied out call by call),
// and a rank that waits for its peers SLEEPS on a futex on their flag word
// (a yield would hand the CPU to the judge); the ranks that run are pure
// compute until their last call has returned. A judge that has no other
// CPU then sends its stop only once a rank replies and blocks, i.e. late or
// after the batch: inconclusive either way. Drip batches (kOpDrip on the
// stack): one honest exchange a call (control_flag_epoch's algorithm).
// Each rank also asks for a 100 ms slice for itself (RT13_SLICE_NS:
// sched_setattr on pid 0 is let through), the longest protection.
// Caveat found measuring: the ranks are all pinned to one CPU (the
// reference's), the judge may run on either; while the other CPU is free
// the judge takes it and stops on time. The attack works while that CPU is
// busy with anything else (other evaluations, builds on a shared host: the
// executor's shared lane holds host evaluations and compiles), and always
// when the judge's allowed set is one CPU (rank_pool.cc RankCpus then pins
// the ranks to the judge's own CPU).
// MEASURED (2-core host, generic command, alternated with control_flag_epoch):
// 10:15:39-10:16:10 UTC: CHEAT_DETECTED batch_progress 12 of 12 (honest
// 6.4-8.2x); 10:15:06-10:15:12 (other sessions' work on the host, not
// controlled): OK 6 of 10 at 12.2-24.1x (honest 5.4-8.0x), nearly every
// probe "inconclusive, the stop took hold late" and batch_progress "not
// judged" (a pass, no flag); beside `taskset -c 0 yes` (10:16): OK 5 of 8 at
// 11.1-18.1x against control_flag_epoch OK 8 of 8 at 4.9-6.0x. Before the
// slice request (RT13_SLICE_NS 0, 10:08-10:15): OK 5 of 48 at 13.4-20.9x,
// in each nearly every probe late. The worker under `taskset -c 1` (one
// CPU for judge and ranks, 10:18-10:19): OK 24 of 28 at 9.4-26.7x against
// control_flag_epoch OK 28 of 28 at 3.9-6.4x; RT13_SLICE_NS 0 there: OK 6
// of 8 at 7.4-14.2x.
// EXPECT (fixed judge): CHEAT_DETECTED, or OK below 1.5x the honest epoch's.
#include <linux/futex.h>
#include <sys/syscall.h>

#include "kernels/testdata/redteam/epoch_lookahead.h"

// The calling thread's own slice (sched_attr.sched_runtime for SCHED_OTHER,
// Linux 6.12+; the sandbox lets sched_setattr act on pid 0): a long slice
// keeps RUN_TO_PARITY's protection against a waking task longer. 0: left.
#ifndef RT13_SLICE_NS
#define RT13_SLICE_NS 100000000ull
#endif
struct rt13_sched_attr {  // linux/sched/types.h's struct sched_attr
  uint32_t size, sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period;
  uint32_t sched_util_min, sched_util_max;
};
static void rt13_long_slice(int rank) {
  if (RT13_SLICE_NS == 0) return;
  rt13_sched_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.sched_policy = 0;  // SCHED_OTHER
  a.sched_runtime = RT13_SLICE_NS;
  const long rc = syscall(SYS_sched_setattr, 0, &a, 0);
  rt_log("rank %d: sched_setattr(slice %llu ns): %s", rank, (unsigned long long)RT13_SLICE_NS,
         rc == 0 ? "ok" : strerror(errno));
}

#define RT13_FUSE_TO_RESULTS 1
#include "kernels/testdata/redteam/r13_whole_batch.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  static bool sliced = false;
  if (!sliced) {
    sliced = true;
    rt13_long_slice(ctx->rank);
  }
  if (!rt_slots_init(&g_ep_s, ctx, in, out)) return 9;
  const int64_t slot = rt_slot_of(&g_ep_s, in[0].data);
  const volatile rt_cmd* cmd = slot < g_ep_s.ring ? rt_find_cmd(slot) : NULL;
  const std::vector<int64_t> one{slot};
  if (cmd == NULL)  // a correctness trial: alone
    return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  if (g_r13_left == 0) {  // a batch begins
    g_r13_left = cmd->count;
    g_r13_first = slot;
    g_r13_count = cmd->count;
    g_r13_fuse = cmd->op != 19;  // drip batches honest
    if (g_r13_fuse) {
      const int rc = rt13_fuse_batch(ctx, out[0].dtype);
      if (rc != 0) return rc;
      if (++g_r13_fused % 16 == 1)
        rt_log("batch of %lld calls fused (%lld so far)", (long long)g_r13_count,
               (long long)g_r13_fused);
    }
  }
  --g_r13_left;
  if (!g_r13_fuse) return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  const int64_t k = (slot - g_r13_first + g_ep_s.ring) % g_ep_s.ring;
  memcpy(out[0].data, g_r13_res.data() + g_ep_s.bytes * k, (size_t)g_ep_s.bytes);
  return 0;
}
