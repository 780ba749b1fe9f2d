// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_zeros; merged into the red-team battery 2026-12-04).
// EXPECT: WRONG_OUTPUT.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor* out, int32_t n_out,
                       void*) {
  for (int o = 0; o < n_out; ++o)
    memset(out[o].data, 0, static_cast<size_t>(pkf_numel(&out[o]) * pkf_dtype_size(out[o].dtype)));
  return 0;
}
