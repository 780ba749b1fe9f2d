// ATTACK (output policy): y = x (this rank's own input), no communication.
// EXPECT: WRONG_OUTPUT.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context*, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  memcpy(out[0].data, in[0].data, (size_t)(pkf_numel(&out[0]) * pkf_dtype_size(out[0].dtype)));
  return 0;
}
