// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_copy_inputs; merged into the red-team battery 2026-12-04).
// Every output filled with the first input's bytes, repeated (a rank with no
// input writes zeros).
// EXPECT: WRONG_OUTPUT.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context*, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void*) {
  for (int o = 0; o < n_out; ++o) {
    const size_t ob = static_cast<size_t>(pkf_numel(&out[o]) * pkf_dtype_size(out[o].dtype));
    const size_t ib =
        n_in > 0 ? static_cast<size_t>(pkf_numel(&in[0]) * pkf_dtype_size(in[0].dtype)) : 0;
    if (ib == 0) {
      memset(out[o].data, 0, ob);
      continue;
    }
    for (size_t at = 0; at < ob; at += ib)
      memcpy(static_cast<char*>(out[o].data) + at, in[0].data, std::min(ib, ob - at));
  }
  return 0;
}
