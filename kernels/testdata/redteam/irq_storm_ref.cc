// ATTACK (round 4, starving the reference from the kernel): a timer-interrupt
// storm on the ranks' CPU while the REFERENCE is timed. Nothing of the
// candidate runs then (frozen), so no check sees it:
// - in pkf_setup rank 0 opens up to 6000 timerfds (its fd limit raised to
//   the hard limit; ~2 us each here, untimed);
// - the judge's ABBA order is fixed (judge.cc Timing: iteration j runs the
//   reference first when (j + warm) is even, so the sequence is R C | C R |
//   R C | ...): after the candidate's 2nd, 4th, 6th ... batch come two
//   reference batches before its next one. At the last call of such a batch
//   (its index and the batch's count read from the harness's Cmd on the
//   stack, chunk_lookahead.h) rank 0 arms its timerfds one-shot, one every
//   ~10 us, starting ~1.2 ms later (once the judge stopped its ranks), over
//   115% of the gap it measured last time (~0.6 us per timerfd_settime,
//   counted in its own batch), and returns; at its next batch it disarms
//   the timers still to come.
// - every expiry is a hardware timer interrupt on the CPU the timers were
//   armed on: the CPU the judge pinned reference rank r and candidate rank r
//   to (judge.cc RankCpus). On this VM an interrupt costs ~10-20 us
//   (measured: 4000 expiries 10 us apart stole ~100% of a spinner's CPU for
//   their 40 ms), and without CONFIG_IRQ_TIME_ACCOUNTING it is charged to the
//   task it interrupted: the reference's schedstat shows it as running.
// pkf_run itself is the naive reference: any speedup above control_naive's
// is forged. Kernel timers of a stopped process keep firing: the freeze
// (SIGSTOP) stops threads, not hrtimers.
// EXPECT (fixed judge): not OK at a speedup above ~1.5x control_naive's
// (RedTeamPending.irq_storm_ref), e.g. the reference's timed batches
// repeated or discarded when its CPU took interrupts the candidate armed, or
// timerfd/timer arming refused to candidate processes.
#include "kernels/testdata/redteam/irq_storm.h"

extern "C" int pkf_setup(pkf_context* ctx) { return rt_storm_setup(ctx); }

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return rt_storm_after_call(ctx, in, out, pkf_run_correct(ctx, in, n_in, out, n_out, stream));
}
