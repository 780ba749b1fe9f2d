// Output-policy self-test candidate (kernels_suite_test), one build for every
// problem: every output of every rank is all zeros. Must be WRONG_OUTPUT.
#include <string.h>

#include "pkforge/candidate.h"
#include "kernels/problems/common/host_math.h"

extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor* out, int32_t n_out,
                       void*) {
  for (int32_t o = 0; o < n_out; ++o) {
    int64_t n = pkf_dtype_size(out[o].dtype);  // integer outputs (ids, counts) too
    for (int32_t d = 0; d < out[o].ndim; ++d) n *= out[o].shape[d];
    memset(out[o].data, 0, (size_t)n);
  }
  return 0;
}
