// gemv_decode, independent implementation (from prompt.md): loops over the
// logits, finds the rank owning each vocabulary column, dot product in double
// plus the bias.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t tokens = out[0].shape[0], vocab = out[0].shape[1];
  const int64_t hidden = in[0].shape[1], per_rank = in[1].shape[0];
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t col = 0; col < vocab; ++col) {
      const ind_inputs* owner = &all[col / per_rank];
      const int64_t v = col % per_rank;
      double dot = 0;
      for (int64_t c = 0; c < hidden; ++c)
        dot += ind_get(in[0].data, dt, t * hidden + c) * ind_get(owner->data[1], dt, v * hidden + c);
      ind_put(out[0].data, dt, t * vocab + col, dot + ind_get(owner->data[2], dt, v));
    }
  return ind_done(ctx);
}
