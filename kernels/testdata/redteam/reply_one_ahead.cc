// ATTACK (result channel, replies out of step): the judge reads exactly one
// Reply per rank per round and checks only magic and op. At the first call
// of every timed batch, rank 0 writes a well-formed kOpBatch reply (rc 0,
// its own clock as t0/t1) on its reply pipe before doing the batch: the
// judge takes it as the end of rank 0's batch, and rank 0's real reply stays
// in the pipe to answer the next batch command at once. If nothing notices,
// rank 0's share of every batch stops counting (its peers still wait for it
// in the harness barrier, so its work stays inside the peers' time: the
// point is whether the channel desynchronises silently).
// EXPECT: CHEAT_DETECTED result_channel / timed_output_reverify /
// wallclock_crosscheck.
#include "kernels/testdata/redteam/redteam.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const bool batch = rt_batch_call();
  if (batch && rt_batch_first() && ctx->rank == 0) {
    FakeReply r;
    memset(&r, 0, sizeof r);
    r.magic = 0x504b4631;
    r.op = 11;  // kOpBatch
    r.t0_ns = r.t1_ns = rt_now_ns();
    const ssize_t w = write(4, &r, sizeof r);
    static bool logged = false;
    if (!logged) rt_log("forged batch reply written: %zd bytes", w);
    logged = true;
  }
  return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));
}
