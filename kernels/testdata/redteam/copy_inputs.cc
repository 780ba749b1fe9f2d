// OUTPUT POLICY self-test, generic over the ABI (built once per problem):
// every output filled with the bytes of the rank's first input, repeated
// (zeros when the rank has no input).
// EXPECT: WRONG_OUTPUT for every problem, dtype and world size.
#include <string.h>

#include "pkforge/candidate.h"
#include "kernels/problems/common/host_math.h"
extern "C" int pkf_run(pkf_context*, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void*) {
  const char* src = NULL;
  size_t sb = 0;
  if (n_in > 0) {
    src = (const char*)in[0].data;
    sb = (size_t)(pkf_numel(&in[0]) * pkf_dtype_size(in[0].dtype));
  }
  for (int32_t o = 0; o < n_out; ++o) {
    char* dst = (char*)out[o].data;
    const size_t ob = (size_t)(pkf_numel(&out[o]) * pkf_dtype_size(out[o].dtype));
    if (sb == 0) {
      memset(dst, 0, ob);
      continue;
    }
    for (size_t off = 0; off < ob; off += sb) memcpy(dst + off, src, ob - off < sb ? ob - off : sb);
  }
  return 0;
}
