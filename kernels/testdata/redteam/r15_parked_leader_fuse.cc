// ATTACK (round 15, helper-redteam15, against f5230d8): make every progress
// probe inconclusive on purpose ("main_idle"), then fuse whole batches.
// What the attacker read: judge_timing.cc ProgressProbe marks a probe
// main_idle (inconclusive) when the ranks' "main threads" ran for under 40%
// of the window; judge_internal.h CandidateWindow::MainThreadsCpuNs takes the
// main thread to be the thread-group leader (ThreadCpuNs(pid, pid)).
// checks.cc BatchProgress: no conclusive probe and none starved or late =
// "not judged", a pass without a flag (the median stays the official time);
// progress_probe.cc ProgressSettled stops probing after 2 x wanted such probes.
// Round 13's r13_idle_helper_whole slept in the leader inside pkf_run, but
// the leader still ran the harness (wake-up, barrier, hand-off): CHEAT 54/54.
// Here the leader runs nothing at all after pkf_setup: pkf_setup saves the
// harness's context (swapcontext) and parks the leader on a private stack in
// a futex wait with every signal blocked; a thread created in pkf_setup
// (baseline, allowed) resumes the saved context on the leader's stack,
// returns from pkf_setup and runs the harness's command loop, every pkf_run
// included, for the rest of the evaluation. The leader's CPU time stays 0,
// so every probe reads main_idle. The calls are drip_aware_fuse's: drip
// batches (kOpDrip on the stack) honest, one barrier-free epoch exchange a
// call; every other timed batch fused whole by its first call, in place.
// EXPECT (fixed judge): CHEAT_DETECTED batch_progress (or not OK above 1.5x
// the honest epoch candidate's speedup).
#include "kernels/testdata/redteam/epoch_lookahead.h"
#include "kernels/testdata/redteam/r15_parked_leader.h"
#include "kernels/testdata/redteam/probe_dodge.h"

static const uint32_t kOpDripCmd = 19;
static int64_t g_drips = 0;

extern "C" int pkf_setup(pkf_context* ctx) {
  rt15_park_leader(ctx->rank);
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_pd_s, ctx, in, out) || !rt_slots_init(&g_ep_s, ctx, in, out))
    return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const int64_t slot = rt_slot_of(&g_pd_s, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  if (cmd != NULL && cmd->op == kOpDripCmd && slot < g_pd_s.ring) {
    const uint32_t k = (uint32_t)((slot - (int64_t)cmd->slot + g_pd_s.ring) % g_pd_s.ring);
    if (k == 0 && ++g_drips <= 4)
      rt_log("drip batch %lld (%u calls): honest", (long long)g_drips, cmd->count);
    const std::vector<int64_t> one{slot};
    return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  }
  const rt_batch_pos p = rt_where(in);
  if (!p.batch) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // a trial
  if (p.k == 0) return rt_fuse_range(ctx, p, in, out[0].dtype, 0, p.count);
  return 0;  // written by the batch's first call
}
