// combined_sharded_gemms, independent implementation (from prompt.md): build
// this rank's rows of X from every rank's hidden shard, then the two products
// and silu in double.
#include <stdlib.h>

#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t rows = out[0].shape[0], hidden = out[0].shape[1], ffn = in[1].shape[1];
  const int64_t shard = hidden / ctx->world_size;
  double* x = (double*)malloc(sizeof(double) * (size_t)(rows * hidden));
  double* act = (double*)malloc(sizeof(double) * (size_t)(rows * ffn));
  if (x == NULL || act == NULL) return 30;
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t k = 0; k < hidden; ++k)
      x[m * hidden + k] = ind_get(all[k / shard].data[0], dt, (ctx->rank * rows + m) * shard + k % shard);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t c = 0; c < ffn; ++c) {
      double z = 0;
      for (int64_t k = 0; k < hidden; ++k) z += x[m * hidden + k] * ind_get(in[1].data, dt, k * ffn + c);
      act[m * ffn + c] = z / (1.0 + exp(-z));
    }
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t n = 0; n < hidden; ++n) {
      double s = 0;
      for (int64_t c = 0; c < ffn; ++c) s += act[m * ffn + c] * ind_get(in[2].data, dt, c * hidden + n);
      ind_put(out[0].data, dt, m * hidden + n, s);
    }
  free(x);
  free(act);
  return ind_done(ctx);
}
