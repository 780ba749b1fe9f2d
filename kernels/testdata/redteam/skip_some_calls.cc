// ATTACK (check schedule): in timed batches, skip every call whose index in
// the batch is not 0 mod 3 and not the last one the attacker can guess (the
// old public schedule verified i % 3 == 0 and the last iteration).
// EXPECT: CHEAT_DETECTED timed_output_reverify.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int k = 0;
  const bool batch = rt_batch_call();
  k = batch && !rt_batch_first() ? k + 1 : 0;
  if (batch && k % 3 != 0) return rt_return(0);
  return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));
}
