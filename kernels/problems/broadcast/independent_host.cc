// broadcast, independent implementation (from prompt.md): y = x of rank 0.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = ind_numel(&out[0]);
  for (int64_t i = 0; i < n; ++i) ind_put(out[0].data, dt, i, ind_get(all[0].data[0], dt, i));
  return ind_done(ctx);
}
