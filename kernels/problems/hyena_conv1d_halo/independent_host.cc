// hyena_conv1d_halo, independent implementation (from prompt.md): the zigzag
// chunks form one global sequence (a_0..a_{w-1}, b_{w-1}..b_0); each output is
// a causal depthwise convolution over that global sequence (zeros before its
// start), computed in double with a global-position -> (rank, offset) map.
#include "pkforge/candidate.h"
#include "../common/independent.h"

// Global zigzag position g -> the owning rank and the offset in its x row.
static void locate(int64_t g, int64_t chunk, int32_t world, int32_t* rank, int64_t* off) {
  const int64_t q = g / chunk;
  if (q < world) {
    *rank = (int32_t)q;
    *off = g % chunk;
  } else {
    *rank = (int32_t)(2 * world - 1 - q);
    *off = chunk + g % chunk;
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int32_t world = ctx->world_size, me = ctx->rank;
  const int64_t batch = out[0].shape[0], channels = out[0].shape[1], local = out[0].shape[2];
  const int64_t chunk = local / 2, taps = in[1].shape[2];
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t j = 0; j < local; ++j) {
        const int64_t g = j < chunk ? me * chunk + j : (2 * world - 1 - me) * chunk + (j - chunk);
        double sum = 0;
        for (int64_t k = 0; k < taps; ++k) {
          const int64_t src = g - (taps - 1) + k;
          if (src < 0) continue;
          int32_t owner;
          int64_t off;
          locate(src, chunk, world, &owner, &off);
          sum += ind_get(in[1].data, dt, c * taps + k) *
                 ind_get(all[owner].data[0], dt, (b * channels + c) * local + off);
        }
        ind_put(out[0].data, dt, (b * channels + c) * local + j, sum);
      }
  return ind_done(ctx);
}
