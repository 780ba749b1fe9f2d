// Output-policy self-test candidate (kernels_suite_test), built per problem:
// the problem's own host reference (PKF_REFERENCE_FILE), i.e. the right
// values, then every output element rounded to a coarser precision than the
// dtype: f32 -> 10 fraction bits (f16's), f16 -> 7 (bf16's), bf16 -> 3 (fp8
// e4m3's), round to nearest even. Must be WRONG_OUTPUT: a tolerance loose
// enough to accept it cannot tell the dtype from the next coarser one.
// Integer outputs (ids, indices, counts; they compare exactly) lose their
// lowest bit instead: any odd value then differs.
#include <math.h>

#include "pkforge/candidate.h"
#include "kernels/problems/common/host_math.h"

#define pkf_run pkf_policy_reference_run
#include PKF_REFERENCE_FILE
#undef pkf_run

static float coarse(float v, pkf_dtype dt) {
  const int mant = dt == PKF_F32 ? 10 : dt == PKF_F16 ? 7 : 3;
  if (v == 0 || !isfinite(v)) return v;
  int e;
  (void)frexpf(v, &e);
  const int q = e - 1 - mant;
  return ldexpf(nearbyintf(ldexpf(v, -q)), q);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const int rc = pkf_policy_reference_run(ctx, in, n_in, out, n_out, stream);
  if (rc != 0) return rc;
  for (int32_t o = 0; o < n_out; ++o) {
    const int64_t n = pkf_numel(&out[o]);
    if (out[o].dtype == PKF_I32 || out[o].dtype == PKF_I64 || out[o].dtype == PKF_U8) {
      const int64_t es = pkf_dtype_size(out[o].dtype);
      for (int64_t i = 0; i < n; ++i) ((unsigned char*)out[o].data)[i * es] &= 0xfe;  // little endian
      continue;
    }
    for (int64_t i = 0; i < n; ++i)
      pkf_store(out[o].data, out[o].dtype, i, coarse(pkf_load(out[o].data, out[o].dtype, i), out[o].dtype));
  }
  return 0;
}
