// conv2d_halo naive cuda solution: every rank copies its inputs into its
// symmetric scratch and meets its peers at the host barrier; one thread per
// output element then convolves, reading the rows above and below its slab
// from the neighbours through the peer mappings (f32 accumulation in the host
// oracle's order).
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers x, const void* wt, const void* bias, int r, int w, void* y, pkf_dtype dt,
                  int64_t c_dim, int64_t hl, int64_t wd) {
  const int64_t n = c_dim * hl * wd;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t o = i / (hl * wd), h = (i / wd) % hl, col0 = i % wd;
    float s = pkf_dload(bias, dt, o);
    for (int64_t c = 0; c < c_dim; ++c)
      for (int64_t kh = 0; kh < 3; ++kh) {
        int64_t row = h + kh - 1;
        const void* src = x.p[r];
        if (row < 0) {
          if (r == 0) continue;
          src = x.p[r - 1];
          row = hl - 1;
        } else if (row >= hl) {
          if (r == w - 1) continue;
          src = x.p[r + 1];
          row = 0;
        }
        for (int64_t kw = 0; kw < 3; ++kw) {
          const int64_t col = col0 + kw - 1;
          if (col < 0 || col >= wd) continue;
          s += pkf_dload(wt, dt, ((o * c_dim + c) * 3 + kh) * 3 + kw) * pkf_dload(src, dt, (c * hl + row) * wd + col);
        }
      }
    pkf_dstore(y, dt, i, s);
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  k<<<pkf_cu_blocks(pkf_cu_numel(&out[0])), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), in[1].data, in[2].data,
                                                         ctx->rank, ctx->world_size, out[0].data, out[0].dtype,
                                                         in[0].shape[1], in[0].shape[2], in[0].shape[3]);
  return pkf_cu_finish(ctx, s);
}
