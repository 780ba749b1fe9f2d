// hyena_conv1d_halo naive cuda solution: every rank copies its inputs into its
// symmetric scratch and meets its peers at the host barrier; one thread per
// output element then convolves, reading halo positions from the neighbour's
// x through the peer mapping (f32, rounded once).
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers x, const void* wgt, int r, int w, void* y, pkf_dtype dt, int64_t rows, int64_t c_n,
                  int64_t l, int64_t k_n) {
  const int64_t n = rows * 2 * l, p = k_n - 1;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = i / (2 * l), pos = i % (2 * l), ch = pos / l, t = pos % l, c = row % c_n;
    float acc = 0.0f;
    for (int64_t kk = 0; kk < k_n; ++kk) {
      const int64_t g = t + kk - p;
      float v = 0.0f;
      if (g >= 0) {
        v = pkf_dload(x.p[r], dt, row * 2 * l + ch * l + g);
      } else if (ch == 0) {
        if (r > 0) v = pkf_dload(x.p[r - 1], dt, row * 2 * l + l + g);
      } else {
        v = r < w - 1 ? pkf_dload(x.p[r + 1], dt, row * 2 * l + 2 * l + g) : pkf_dload(x.p[r], dt, row * 2 * l + l + g);
      }
      acc += pkf_dload(wgt, dt, c * k_n + kk) * v;
    }
    pkf_dstore(y, dt, i, acc);
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t rows = in[0].shape[0] * in[0].shape[1];
  k<<<pkf_cu_blocks(pkf_cu_numel(&out[0])), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), in[1].data, ctx->rank,
                                                         ctx->world_size, out[0].data, out[0].dtype, rows,
                                                         in[0].shape[1], in[0].shape[2] / 2, in[1].shape[2]);
  return pkf_cu_finish(ctx, s);
}
