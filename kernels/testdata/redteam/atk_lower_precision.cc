// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_lower_precision; merged into the red-team battery 2026-12-04).
// The right sum, rounded to bfloat16 (an f32 problem): too coarse.
// EXPECT: WRONG_OUTPUT.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < pkf_numel(&out[0]); ++i) {
    uint32_t b;
    memcpy(&b, &y[i], 4);
    b = (b + 0x7fff + ((b >> 16) & 1)) & 0xffff0000u;
    memcpy(&y[i], &b, 4);
  }
  return rc;
}
