// kjt_all2all host reference: every rank publishes its jagged batch; rank r
// (features [fo, fo + ks) of the global key order) writes, for each of its
// features f and each source rank i in order, rank i's B lengths of feature
// fo + f and their values (found by a prefix sum over rank i's lengths),
// then -1 up to the values' capacity, stride = world*B, stride_per_rank = B.
#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const int32_t w = ctx->world_size, r = ctx->rank;
  int64_t fo = 0;
  for (int32_t j = 0; j < r; ++j) fo += 1 + j % 3;
  const int64_t ks = 1 + r % 3, b = out[0].shape[0] / (ks * w);
  int64_t* len_out = (int64_t*)out[0].data;
  int64_t* val_out = (int64_t*)out[1].data;
  int64_t written = 0;
  for (int64_t f = 0; f < ks; ++f)
    for (int32_t i = 0; i < w; ++i) {
      const int64_t* len = (const int64_t*)peer[i][0];
      const int64_t* val = (const int64_t*)peer[i][1];
      int64_t off = 0;
      for (int64_t k = 0; k < (fo + f) * b; ++k) off += len[k];
      for (int64_t s = 0; s < b; ++s) {
        const int64_t n = len[(fo + f) * b + s];
        len_out[(f * w + i) * b + s] = n;
        if (written + n > out[1].shape[0]) return 21;
        memcpy(val_out + written, val + off, (size_t)n * 8);
        written += n;
        off += n;
      }
    }
  for (int64_t k = written; k < out[1].shape[0]; ++k) val_out[k] = -1;
  ((int64_t*)out[2].data)[0] = (int64_t)w * b;
  for (int32_t i = 0; i < w; ++i) ((int64_t*)out[3].data)[i] = b;
  return ctx->barrier(ctx);
}
