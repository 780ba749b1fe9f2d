// conv2d_halo host reference: y[o, h, w] = bias[o] + sum over c, kh, kw of
// weight[o, c, kh, kw] * X[c, r*HL + h + kh - 1, w + kw - 1], X the global image
// (zero outside); rows above/below this rank's slab come from the neighbours'
// last/first row. f32 accumulation, rounded once.
#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t c_dim = in[0].shape[1], hl = in[0].shape[2], wd = in[0].shape[3];
  const int32_t r = ctx->rank, world = ctx->world_size;
  for (int64_t o = 0; o < c_dim; ++o)
    for (int64_t h = 0; h < hl; ++h)
      for (int64_t w = 0; w < wd; ++w) {
        float s = pkf_load(in[2].data, dt, o);
        for (int64_t c = 0; c < c_dim; ++c)
          for (int64_t kh = 0; kh < 3; ++kh) {
            int64_t row = h + kh - 1;
            const void* src = in[0].data;
            if (row < 0) {  // the upper neighbour's last row
              if (r == 0) continue;
              src = peer[r - 1][0];
              row = hl - 1;
            } else if (row >= hl) {  // the lower neighbour's first row
              if (r == world - 1) continue;
              src = peer[r + 1][0];
              row = 0;
            }
            for (int64_t kw = 0; kw < 3; ++kw) {
              const int64_t col = w + kw - 1;
              if (col < 0 || col >= wd) continue;
              s += pkf_load(in[1].data, dt, ((o * c_dim + c) * 3 + kh) * 3 + kw) *
                   pkf_load(src, dt, (c * hl + row) * wd + col);
            }
          }
        pkf_store(out[0].data, dt, (o * hl + h) * wd + w, s);
      }
  return ctx->barrier(ctx);
}
