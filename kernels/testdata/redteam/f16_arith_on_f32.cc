// ATTACK (output policy): f16 arithmetic (11 bits of mantissa) on an f32
// problem.
// EXPECT: WRONG_OUTPUT (f32 tolerance).
#define RT_LOWP PKF_F16
#include "kernels/testdata/redteam/lowp.inc"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t, void*) {
  return lowp_run(ctx, in, n_in, out);
}
