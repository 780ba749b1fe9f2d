// ATTACK (round 7, blame, against b54dfb2): turn the candidate's own
// misbehaviour into a HARNESS_ERROR naming the reference ranks.
//
// What the attacker read: judge.cc DripPair sends kOpDripWatch to the
// reference ranks (each watches its candidate rank's drip word, rank.cc
// Watch, for up to seed = timeout_s x 1000 ms from when it starts), runs the
// candidate's drip batch (CandRound: it ends when every candidate rank has
// written a well-formed reply, then freezes the candidate), and only then
// collects the watchers' replies: Collect(refs) waits until max(the phase
// deadline, now + kRefRoundMinNs = 5 s). The phase deadline is the timing
// phase's start + timeout_s, always before the watcher's own limit (which
// started later), so a watcher that waits to its limit is "reference ranks
// gave no reply" -> HarnessFault. A candidate rank may write anything on its
// reply pipe (fd 4): at the first call of a drip batch (the kOpDrip Cmd on
// its stack) every rank writes a well-formed kOpDrip reply (magic, op 19,
// rc 0) and then blocks in the call. The judge accepts the replies, freezes
// the candidate mid-call, and waits for watchers that wait for a return that
// can never come.
// EXPECT (fixed judge): never HARNESS_ERROR; CHEAT_DETECTED (result_channel,
// batch_drip; input_mutation / timed_output_reverify where the calls never
// released still hold decoys), or TIMEOUT / RUNTIME_ERROR naming the candidate.
// Measured at b54dfb2: HARNESS_ERROR "reference ranks 0,1,2 gave no reply
// within 10 s in PHASE_TIMING" 5 of 5 (10.1-10.2 s each).
#include "kernels/testdata/redteam/chunk_lookahead.h"

namespace {
rt_slots g_s;
}  // namespace

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_s, ctx, in, out)) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const int64_t slot = rt_slot_of(&g_s, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  if (cmd != NULL && cmd->op == 19 && slot < g_s.ring) {
    FakeReply r;
    memset(&r, 0, sizeof r);
    r.magic = kRtMagic;
    r.op = 19;  // kOpDrip
    const ssize_t w = write(4, &r, sizeof r);
    rt_log("drip batch at slot %lld: forged kOpDrip reply (%zd bytes), now blocking in the call",
           (long long)slot, w);
    for (;;) sleep(1000);
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
