// reducescatter_rmsnorm naive cuda solution: every rank copies its inputs into
// its symmetric scratch and meets its peers at the host barrier; one thread per
// output element then sums its row over the peers (f32) for the RMS and its
// own element, in the host oracle's order.
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers x, const void* gamma, int w, int r, void* y, pkf_dtype dt, int64_t rows,
                  int64_t h) {
  const int64_t n = rows * h;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = i / h, col = i % h, base = (r * rows + row) * h;
    float ss = 0.0f, mine = 0.0f;
    for (int64_t c = 0; c < h; ++c) {
      float v = 0.0f;
      for (int j = 0; j < w; ++j) v += pkf_dload(x.p[j], dt, base + c);
      v = v / (float)w;
      ss += v * v;
      if (c == col) mine = v;
    }
    const float inv = 1.0f / sqrtf(ss / (float)h + 1e-5f);
    pkf_dstore(y, dt, i, mine * inv * pkf_dload(gamma, dt, col));
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t rows = out[0].shape[0], h = out[0].shape[1];
  k<<<pkf_cu_blocks(rows * h), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), in[1].data, ctx->world_size,
                                            ctx->rank, out[0].data, out[0].dtype, rows, h);
  return pkf_cu_finish(ctx, s);
}
