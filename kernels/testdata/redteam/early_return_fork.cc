// ATTACK (times): in timed batches, compute the outputs into a private buffer,
// fork a child that copies them into the (shared) output 20 ms later and
// exits, and return at once.
// EXPECT: CHEAT_DETECTED outlived_call or timed_output_reverify.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_batch_call()) return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));
  const size_t bytes = (size_t)(pkf_numel(&out[0]) * pkf_dtype_size(out[0].dtype));
  std::vector<char> tmp(bytes);
  pkf_tensor t = out[0];
  t.data = tmp.data();
  const int rc = pkf_run_correct(ctx, in, n_in, &t, n_out, stream);
  const int c = rt_fork();
  if (c == 0) {
    usleep(20000);
    memcpy(out[0].data, tmp.data(), bytes);
    _exit(0);
  }
  return rt_return(rc);
}
