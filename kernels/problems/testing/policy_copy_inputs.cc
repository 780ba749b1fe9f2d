// Output-policy self-test candidate (kernels_suite_test), one build for every
// problem: every output holds the bytes of the rank's first input, repeated
// or cut to the output's size (zeros on a rank without inputs). Must be
// WRONG_OUTPUT from world size 2 on (at world size 1 a pure collective's
// answer is its input).
#include <string.h>

#include "pkforge/candidate.h"
#include "kernels/problems/common/host_math.h"

static size_t bytes_of(const pkf_tensor* t) {
  size_t n = (size_t)pkf_dtype_size(t->dtype);  // integer tensors (ids, counts) too
  for (int32_t d = 0; d < t->ndim; ++d) n *= (size_t)t->shape[d];
  return n;
}

extern "C" int pkf_run(pkf_context*, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void*) {
  for (int32_t o = 0; o < n_out; ++o) {
    char* dst = (char*)out[o].data;
    const size_t ob = bytes_of(&out[o]);
    const size_t sb = n_in > 0 ? bytes_of(&in[0]) : 0;
    if (sb == 0) {
      memset(dst, 0, ob);
      continue;
    }
    for (size_t off = 0; off < ob; off += sb)
      memcpy(dst + off, in[0].data, ob - off < sb ? ob - off : sb);
  }
  return 0;
}
