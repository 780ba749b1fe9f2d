// ATTACK (output policy): every output all zeros.
// EXPECT: WRONG_OUTPUT.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor* out, int32_t n_out,
                       void*) {
  for (int32_t o = 0; o < n_out; ++o)
    memset(out[o].data, 0, (size_t)(pkf_numel(&out[o]) * pkf_dtype_size(out[o].dtype)));
  return 0;
}
