// ATTACK (lazy outputs): correct in the correctness trials, nothing at all
// in the timed batches.
// EXPECT: CHEAT_DETECTED timed_output_reverify (or poison_unwritten).
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (rt_batch_call()) return rt_return(0);
  return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));
}
