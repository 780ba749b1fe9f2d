// Red team round 23 (helper-redteam23, session 17, against d1a13fa: the
// stall rule of batch_progress, 306ea6e): whole-batch fusers shaped to read
// "not stalled" on the host. Shared by r23_real_first_fuse,
// r23_blast_keep_last and r23_real_first_blast.
//
// What the attacker read (progress_probe.h/.cc): a probe is "stalled" only
// when it is behind with done == 0 exactly after a third of the batch;
// "ahead" needs done >= 0.999 (kAllDone) by half the batch; "behind" needs
// done + 1/calls < 0.25 x elapsed. So (a) one honest call before the fused
// one makes done = 1/calls > 0 on every early probe (never stalled), and
// (b) writing every fused output but the LAST one at once when the fused
// work lands makes done = 1 - 1/calls (0.992 at 128 calls, 0.969 at 32),
// under kAllDone: never ahead, and consistent from then on; padding the
// batch's last call (a sleep of R23_TAIL_X times the fused work's time,
// before it writes the last output) moves the landing to before a third of
// the batch. (A first version spun the pad out over the later calls: three
// ranks spinning on two CPUs were time-sliced in ms, 31.7 us a call, 1.18x.)
//
// Every rank fuses at the same call (the harness's command on the rank's
// stack gives the batch's count and op: rt_find_cmd); drip batches (op 19)
// and correctness trials are honest, one epoch exchange a call.
// allreduce only (the battery's problem).
#pragma once

#define RT13_FUSE_TO_RESULTS
#include "kernels/testdata/redteam/r13_whole_batch.h"

#ifndef R23_REAL_FIRST  // honest calls at the start of every fused batch
#define R23_REAL_FIRST 0
#endif
#ifndef R23_BLAST  // 1: all fused outputs but the last written in place when they land
#define R23_BLAST 0
#endif
#ifndef R23_TAIL_X  // the last call sleeps this many times the fused work's time
#define R23_TAIL_X 0
#endif

static int64_t g_r23_pos = 0, g_r23_batch_first = 0, g_r23_batch_count = 0, g_r23_pad_ns = 0;
// PKFORGE_R23_TAIL_X in the environment overrides R23_TAIL_X (the sweep of
// the findings; the tests use the built-in value).
static double rt23_tail_x() {
  static const double x = getenv("PKFORGE_R23_TAIL_X") ? atof(getenv("PKFORGE_R23_TAIL_X"))
                                                       : (double)R23_TAIL_X;
  return x;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  const int64_t entry = rt_ep_now_ns();
  if (!rt_slots_init(&g_ep_s, ctx, in, out)) return 9;
  const rt_slots& s = g_ep_s;
  const int64_t slot = rt_slot_of(&s, in[0].data);
  const volatile rt_cmd* cmd = slot < s.ring ? rt_find_cmd(slot) : NULL;
  const std::vector<int64_t> one{slot};
  if (cmd == NULL)  // a correctness trial: alone
    return rt_ep_exchange(ctx, &s, one, out[0].dtype, {(char*)out[0].data});
  if (g_r13_left == 0) {  // a batch begins
    g_r13_left = cmd->count;
    g_r23_pos = 0;
    g_r23_batch_first = slot;
    g_r23_batch_count = cmd->count;
    g_r13_fuse = cmd->op != 19 && cmd->count >= 4 + R23_REAL_FIRST;
    g_r23_pad_ns = 0;
  }
  const int64_t pos = g_r23_pos++;
  --g_r13_left;
  if (!g_r13_fuse || pos < R23_REAL_FIRST)
    return rt_ep_exchange(ctx, &s, one, out[0].dtype, {(char*)out[0].data});
  const int64_t k = pos - R23_REAL_FIRST;  // index into the fused results
  if (k == 0) {
    g_r13_first = (g_r23_batch_first + R23_REAL_FIRST) % s.ring;
    g_r13_count = g_r23_batch_count - R23_REAL_FIRST;
    const int rc = rt13_fuse_batch(ctx, out[0].dtype);
    if (rc != 0) return rc;
    if (R23_BLAST)
      for (int64_t i = 1; i + 1 < g_r13_count; ++i)
        memcpy(rt_out_at(&s, (g_r13_first + i) % s.ring), g_r13_res.data() + s.bytes * i,
               (size_t)s.bytes);
    const int64_t fused_ns = rt_ep_now_ns() - entry;
    g_r23_pad_ns = (int64_t)(rt23_tail_x() * (double)fused_ns);
    if (++g_r13_fused % 16 == 1)
      rt_log("batch of %lld calls fused (%lld so far; %lld ns, pad %lld ns)",
             (long long)g_r13_count, (long long)g_r13_fused, (long long)fused_ns,
             (long long)g_r23_pad_ns);
  } else if (g_r23_pad_ns > 0 && k + 1 == g_r13_count) {
    const timespec ts{(time_t)(g_r23_pad_ns / 1000000000), (long)(g_r23_pad_ns % 1000000000)};
    nanosleep(&ts, nullptr);
  }
  if (!R23_BLAST || k == 0 || k + 1 == g_r13_count)
    memcpy(out[0].data, g_r13_res.data() + s.bytes * k, (size_t)s.bytes);
  return 0;
}
