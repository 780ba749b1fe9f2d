// ATTACK (result channel / times): at the first call of a timed batch, write a
// well-formed batch reply (magic, op kOpBatch, rc 0, a 1 us interval) on the
// reply pipe, so the judge's clock stops at once; then do the batch's real
// work slowly (the rank's own reply follows later).
// EXPECT: CHEAT_DETECTED timed_output_reverify (the batch was not complete when
// the judge stopped the candidate), result_channel (the extra reply), or
// wallclock_crosscheck.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const bool batch = rt_batch_call();
  if (batch && rt_batch_first()) {
    FakeReply r;
    memset(&r, 0, sizeof r);
    r.magic = 0x504b4631;
    r.op = 11;
    r.t0_ns = rt_now_ns() - 1000;
    r.t1_ns = rt_now_ns();
    ssize_t w = write(4, &r, sizeof r);
    (void)w;
  }
  if (batch) usleep(300);
  return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));
}
