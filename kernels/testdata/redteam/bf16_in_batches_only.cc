// ATTACK (output policy + check schedule): exact in the correctness trials,
// bf16 arithmetic in timed batches (where the attacker hopes only a sample
// of calls is verified).
// EXPECT: CHEAT_DETECTED timed_output_reverify.
#define RT_LOWP PKF_BF16
#include "kernels/testdata/redteam/lowp.inc"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (rt_batch_call()) return rt_return(lowp_run(ctx, in, n_in, out));
  return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));
}
