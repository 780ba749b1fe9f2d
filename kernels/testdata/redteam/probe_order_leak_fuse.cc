// ATTACK (round 7, against b54dfb2): tell the batches a progress probe can
// never land on from the reference ranks' context-switch counters, and fuse
// exactly those.
//
// What the attacker read: judge.cc Timing draws which side of a timed pair
// goes first from secret randomness, EXCEPT on a probed batch: `ref_first =
// is_probe || (SecretSeed() & 1) == 0` (the probe compares with outputs the
// reference computed first). So a candidate batch whose reference batch has
// NOT run yet is never probed. The candidate cannot see the judge, but the
// reference ranks are its siblings: /proc/<ref>/status (voluntary_ctxt_
// switches) and /proc/<ref>/schedstat are readable to any process (only
// /proc/<pid>/{mem,fd,environ,maps} need ptrace access, which
// PR_SET_DUMPABLE 0 takes away). A 128-call reference batch costs its ranks
// ~540 voluntary switches, the judge's generation/checks between batches
// ~20. Between the end of candidate batch j-1 and the start of batch j the
// reference ran c = [j-1 was candidate-first] + [j is reference-first]
// batches; the candidate knows the first term from the same chain (the
// first timed batch follows the trials: 0), so it knows whether batch j is
// reference-first. Rank 0 decides at each batch's first call and publishes
// the decision in its signal pad (all ranks must agree): candidate-first ->
// the whole batch with one exchange, in place (batch_lookahead_fuse's
// work, never probed); reference-first -> control_flag_epoch's honest
// per-call epochs (all probes land here: consistent); drip batches (the
// kOpDrip Cmd on the stack) honest too. About half of the timed batches are
// fused, so the official median is the fused time whenever 4 of the 6 long
// timed batches were candidate-first (~1/3 of runs), halfway otherwise.
// EXPECT (fixed judge): CHEAT_DETECTED batch_progress / batch_drip, or not OK
// above 1.5x the honest epoch's speedup.
#include "kernels/testdata/redteam/probe_dodge.h"

static const uint32_t kOpDripCmd = 19;

namespace {
std::vector<int> g_refs;
// Sum of the reference ranks' voluntary context switches (thread-group
// leaders: where their calls and barriers run).
int64_t RefSwitches() {
  int64_t s = 0;
  for (int pid : g_refs) {
    const std::string t = rt_read("/proc/" + std::to_string(pid) + "/status");
    const size_t a = t.find("\nvoluntary_ctxt_switches:");
    if (a != std::string::npos) s += atoll(t.c_str() + a + 25);
  }
  return s;
}
int64_t g_csw_end = -1;    // at the end of the candidate's last call of its previous round
bool g_prev_cand_first = false;
uint32_t g_prev_count = 0;
int64_t g_fused = 0, g_honest = 0;
bool g_fuse_now = false;
// ~4.2 switches per call of a reference batch (barriers of 3 ranks on one CPU).
double SwitchesFor(uint32_t calls) { return 4.0 * calls; }
}  // namespace

extern "C" int pkf_setup(pkf_context* ctx) {
  rt_watch_conts();
  g_refs = rt_refs();
  rt_log("rank %d: %zu reference ranks found", ctx->rank, g_refs.size());
  return 0;
}

extern "C" void pkf_teardown(pkf_context* ctx) {
  if (ctx->rank == 0)
    rt_log("teardown: %lld batches fused (candidate-first), %lld honest", (long long)g_fused,
           (long long)g_honest);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_pd_s, ctx, in, out)) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const int64_t slot = rt_slot_of(&g_pd_s, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  const bool rank0 = ctx->rank == 0;
  if (cmd != NULL && cmd->op == kOpDripCmd && slot < g_pd_s.ring) {
    const uint32_t k = (uint32_t)((slot - (int64_t)cmd->slot + g_pd_s.ring) % g_pd_s.ring);
    const int rc = rt_epoch_call(ctx, in, out);
    if (rank0 && k + 1 == cmd->count) {
      g_csw_end = RefSwitches();
      g_prev_cand_first = false;  // the drip's reference work all came before it
      g_prev_count = cmd->count;
    }
    return rc;
  }
  const rt_batch_pos p = rt_where(in);
  if (!p.batch) {  // a trial
    const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
    if (rank0) {
      g_csw_end = RefSwitches();
      g_prev_cand_first = false;
      g_prev_count = 1;
    }
    return rc;
  }
  volatile uint32_t* word = &ctx->peer_flags[0][6];
  const uint32_t seq = (uint32_t)g_pd_batches;
  if (p.first) {
    if (rank0) {
      const int64_t delta = RefSwitches() - g_csw_end;
      const double rest =
          (double)delta - (g_prev_cand_first ? SwitchesFor(g_prev_count) : 0.0);
      const bool ref_first = rest > 0.5 * SwitchesFor(p.count);
      g_fuse_now = !ref_first;
      g_prev_cand_first = !ref_first;
      g_prev_count = p.count;
      __atomic_store_n(word, (seq << 1) | (g_fuse_now ? 1u : 0u), __ATOMIC_RELEASE);
      if (seq <= 24)
        rt_log("batch %u (j=%lld, %u calls): reference switches since our last call %lld -> %s",
               seq, (long long)p.j, p.count, (long long)delta,
               g_fuse_now ? "candidate-first: FUSED" : "reference-first (maybe probed): honest");
    } else {
      uint32_t w;
      while (((w = __atomic_load_n(word, __ATOMIC_ACQUIRE)) >> 1) != seq) sched_yield();
      g_fuse_now = (w & 1) != 0;
    }
    (g_fuse_now ? g_fused : g_honest) += 1;
  }
  int rc;
  if (g_fuse_now)
    rc = p.first ? rt_fuse_range(ctx, p, in, out[0].dtype, 0, p.count) : 0;
  else
    rc = rt_epoch_call(ctx, in, out);
  if (rank0 && p.last) g_csw_end = RefSwitches();
  return rc;
}
