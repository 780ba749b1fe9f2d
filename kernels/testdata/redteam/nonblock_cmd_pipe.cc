// ATTACK (the harness's I/O assumptions, blame): the candidate sets
// O_NONBLOCK on its rank's command pipe (fd 3) in its first timed call. The
// harness's next read of a command fails with EAGAIN instead of waiting, its
// loop ends and the rank exits between two commands: the judge sees a
// candidate rank vanish outside any candidate code. It must still be the
// candidate's failure.
// EXPECT: RUNTIME_ERROR (or any candidate status), never HARNESS_ERROR.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (rt_batch_call() && ctx->rank == 1) {
    const int fl = fcntl(3, F_GETFL);
    fcntl(3, F_SETFL, fl | O_NONBLOCK);
  }
  return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));
}
