// ATTACK (round 10, public check schedule): the timed batches a progress
// probe can never land on hold most of the official samples, and the rest
// are front-loaded just enough to read "consistent".
//
// What the attacker read (judge_timing.cc Timing): probes are drawn among
// j >= kProbeAfter + kShortBatches = 5 and drip batches among j >= 3 (j = 0
// is the first timed batch after the warm-up); with --iters 6 the median is
// over 6 long timed batches spread over j = 0..13, of which ~3-4 lie in
// j < 5. A drip batch says so (the kOpDrip Cmd on the rank's stack) and takes
// a j slot too. A probe stops the candidate at 30-70% of its FASTEST earlier
// long batch (command to last reply) and reads "behind" when fewer than a
// quarter of that share of the calls are done (progress_probe.cc).
// So:
// - warm-up, j < 5 and short batches (never probed): the whole batch with
//   one exchange at call 0, outputs in place (batch_lookahead_fuse), padded
//   at its last call to a span of RT_PAD_US (a probe's point is a share of
//   the fastest span: unpadded, a fused span is mostly wake-up and every
//   later probe would land before anything can be done: round 5's defence);
// - j >= 5 (may be probed): calls [0, 15%) with one exchange at call 0,
//   [15%, 35%) with a second at call 15%, the honest barrier-free epoch
//   exchange (control_flag_epoch's) for the rest: by 30% of the padded span
//   15% are done, by 70% 35% (behind needs < 25% x elapsed);
// - drip batches: the honest epoch exchange per call (their free-running
//   yardstick, the median, is a fused batch's: the allowance grows with it).
// EXPECT (fixed judge): CHEAT_DETECTED, or not OK above 1.5x the honest
// epoch algorithm (RedTeamPending.probe_window_front); e.g. probes drawn
// over every timed batch, or the median only over batches that could have
// been probed.
// Knob (measurements): $PKF_REDTEAM_DIR/front.conf "<pad us> <first %> <second %> [chunk]"
// (chunk > 1: calls after the second share in chunks of that many, one
// exchange each, instead of the honest epoch exchange).
// Measured (worker of 06:43, HEAD e37f0a6's judge + the lead's kOpTouch WT,
// w3 f32 tiny, load < 1; control_flag_epoch 7.50 / 7.82 / 7.81x in the same
// minutes): pad 120 us (default) OK 11.56 / 11.32 / 16.16x (probes consistent;
// once 3 of 9 behind = flag); pad 180 OK 10.64 / 10.34 / 10.60x, pad 250
// 10.02 / 10.31 / 9.53x, pad 350 8.95 / 8.89 / 8.99x (every probe and drip
// consistent); pad 60 OK 15.78 / 12.17 / 11.05x (flags); no pad: OK 12.5 /
// 18.0x, CHEAT batch_progress 1 of 3. Only batch_consistency (a flag on the
// host: 3.2-3.3x) and speedup_plausibility (> 10x) ever flag.
#include "kernels/testdata/redteam/probe_dodge.h"

namespace {
const uint32_t kOpDripCmd = 19;  // protocol.h kOpDrip
long g_pad_us = 120, g_a_pct = 15, g_b_pct = 35, g_chunk = 0;
int64_t g_drips = 0;  // drip batches seen (each takes one of the judge's j)
bool g_conf = false;
void ReadConf() {
  g_conf = true;
  const char* dir = getenv("PKF_REDTEAM_DIR");
  if (dir == NULL) return;
  FILE* f = fopen((std::string(dir) + "/front.conf").c_str(), "r");
  if (f == NULL) return;
  if (fscanf(f, "%ld %ld %ld %ld", &g_pad_us, &g_a_pct, &g_b_pct, &g_chunk) < 3)
    rt_log("front.conf: 3 or 4 numbers");
  fclose(f);
}
}  // namespace

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!g_conf) ReadConf();
  if (!rt_slots_init(&g_pd_s, ctx, in, out)) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const int64_t slot = rt_slot_of(&g_pd_s, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  if (cmd != NULL && cmd->op == kOpDripCmd && slot < g_pd_s.ring) {
    if ((uint32_t)slot == cmd->slot) ++g_drips;
    return rt_epoch_call(ctx, in, out);  // honest where every call is watched
  }
  const rt_batch_pos p = rt_where(in);
  if (!p.batch) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // a trial
  const int64_t j = p.j + g_drips;
  const bool probeable = j >= kRtFirstProbe && !p.is_short;
  static int64_t t_first = 0;
  if (p.first) t_first = rt_now_ns();
  if (p.first && j < 12 && ctx->rank == 0)
    rt_log("batch j=%lld (%u calls): %s", (long long)j, p.count,
           probeable ? "front-loaded (may be probed)" : "fused whole, padded (never probed)");
  if (!probeable) {
    int rc = 0;
    if (p.first) rc = rt_fuse_range(ctx, p, in, out[0].dtype, 0, p.count);
    if (p.last)
      while (rt_now_ns() - t_first < g_pad_us * 1000) {
      }
    return rc;
  }
  const uint32_t a = std::max<uint32_t>(1, (uint32_t)(p.count * g_a_pct / 100));
  const uint32_t b = std::max<uint32_t>(a, (uint32_t)(p.count * g_b_pct / 100));
  if (p.k == 0) return rt_fuse_range(ctx, p, in, out[0].dtype, 0, a);
  if (p.k < a) return 0;
  if (p.k == a && b > a) return rt_fuse_range(ctx, p, in, out[0].dtype, a, b);
  if (p.k < b) return 0;
  if (g_chunk > 1) {  // (measurements) chunks of g_chunk calls, one exchange each
    if ((p.k - b) % (uint32_t)g_chunk != 0) return 0;
    return rt_fuse_range(ctx, p, in, out[0].dtype, p.k, p.k + (uint32_t)g_chunk);
  }
  return rt_epoch_call(ctx, in, out);
}
