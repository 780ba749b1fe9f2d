// sinkhorn_knopp, independent implementation (from prompt.md): each rank keeps
// only its own samples and obtains the global sums from every rank's partial
// sums (recomputed from the shared inputs, as an all-reduce would deliver
// them), long double accumulation; the total-mass division is folded into
// the first prototype normalization, which cancels it exactly in real arithmetic.
#include <math.h>
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
  const int32_t w = ctx->world_size;
  const int64_t rows = in[0].shape[0], np = in[0].shape[1];
  // Every rank's matrix, so each rank's partial sums can be formed exactly as
  // that rank would (then "all-reduced" by adding them).
  long double* m = (long double*)malloc(sizeof(long double) * (size_t)(w * rows * np));
  long double* sums = (long double*)malloc(sizeof(long double) * (size_t)np);
  if (m == NULL || sums == NULL) return 31;
  for (int32_t r = 0; r < w; ++r)
    for (int64_t i = 0; i < rows * np; ++i) m[r * rows * np + i] = expl(ind_get(all[r].data[0], dt, i) / 0.07L);
  for (int iter = 0; iter < 3; ++iter) {
    for (int64_t k = 0; k < np; ++k) {
      sums[k] = 0;
      for (int32_t r = 0; r < w; ++r)
        for (int64_t b = 0; b < rows; ++b) sums[k] += m[(r * rows + b) * np + k];
    }
    for (int32_t r = 0; r < w; ++r)
      for (int64_t b = 0; b < rows; ++b) {
        long double* row = m + (r * rows + b) * np;
        long double s = 0;
        for (int64_t k = 0; k < np; ++k) s += row[k] / sums[k];
        for (int64_t k = 0; k < np; ++k) row[k] = row[k] / sums[k] / s;  // sample sums to 1
      }
  }
  // Each sample's column of Q sums to 1/total_batch; times total_batch = 1.
  for (int64_t i = 0; i < rows * np; ++i) ind_put(out[0].data, dt, i, (double)m[ctx->rank * rows * np + i]);
  free(m);
  free(sums);
  return ind_done(ctx);
}
