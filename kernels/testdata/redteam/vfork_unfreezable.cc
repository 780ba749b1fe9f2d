// ATTACK (blame / freeze): in a timed batch, vfork a child that sleeps 30 s:
// the rank waits for it in an uninterruptible (D) state that SIGSTOP cannot
// stop, so the judge's freeze can never be verified.
// EXPECT: TIMEOUT (a candidate fault) or CHEAT_DETECTED outlived_call; never
// HARNESS_ERROR; nothing left alive.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const bool batch = rt_batch_call();
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  static bool done = false;
  if (batch && !done && ctx->rank == 0) {
    done = true;
    rt_record_pid(getpid());
    const int c = vfork();
    if (c == 0) {
      struct timespec ts = {30, 0};
      syscall(SYS_nanosleep, &ts, NULL);
      _exit(0);
    }
  }
  return rt_return(rc);
}
