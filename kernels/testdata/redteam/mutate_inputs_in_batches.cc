// ATTACK (input mutation): in timed batches, accumulate in place: the
// reduction is computed into this rank's input buffer (no separate
// accumulator) and then copied to the output; the input is left modified.
// EXPECT: CHEAT_DETECTED input_mutation (or timed_output_reverify).
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const bool batch = rt_batch_call();
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  if (batch)
    memcpy(in[0].data, out[0].data, (size_t)(pkf_numel(&out[0]) * pkf_dtype_size(out[0].dtype)));
  return rt_return(rc);
}
