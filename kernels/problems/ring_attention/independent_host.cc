// ring_attention, independent implementation (from prompt.md): assemble the
// global sequence (rank j's positions follow rank j-1's), then plain causal
// softmax attention in double, without subtracting the maximum (|scores| are
// small: |q.k| <= D for inputs in [-1, 1)).
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
  const int64_t batch = in[0].shape[0], local = in[0].shape[1], heads = in[0].shape[2], dim = in[0].shape[3];
  const double scale = 1.0 / sqrt((double)dim);
  double* weights = (double*)malloc(sizeof(double) * (size_t)(local * ctx->world_size));
  if (weights == NULL) return 31;
#define IND_AT(t, rank, b, pos, h, d) \
  ind_get(all[rank].data[t], dt, (((b) * local + (pos)) * heads + (h)) * dim + (d))
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < local; ++i) {
        const int64_t last = ctx->rank * local + i;  // causal: keys 0..last
        double total = 0;
        for (int64_t key = 0; key <= last; ++key) {
          double dot = 0;
          for (int64_t d = 0; d < dim; ++d)
            dot += IND_AT(0, ctx->rank, b, i, h, d) * IND_AT(1, key / local, b, key % local, h, d);
          weights[key] = exp(dot * scale);
          total += weights[key];
        }
        for (int64_t d = 0; d < dim; ++d) {
          double o = 0;
          for (int64_t key = 0; key <= last; ++key) o += weights[key] * IND_AT(2, key / local, b, key % local, h, d);
          ind_put(out[0].data, dt, (((b * local) + i) * heads + h) * dim + d, o / total);
        }
      }
#undef IND_AT
  free(weights);
  return ind_done(ctx);
}
