// ulysses_gather_seq_scatter_heads_qkv naive cuda solution: every rank copies
// its input into its symmetric scratch and meets its peers at the host barrier;
// one thread per output element reads y[b, j*T + t, s*C + c] =
// x_j[b, t, s*HD + r*C + c] through the peer mapping.
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers x, int r, int w, void* y, pkf_dtype dt, int64_t bb, int64_t t_in, int64_t hd) {
  const int64_t c = hd / w, total = bb * w * t_in * 3 * c;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t col = i % (3 * c), tt = (i / (3 * c)) % (w * t_in), b = i / (3 * c * w * t_in);
    const int64_t s = col / c, ci = col % c, j = tt / t_in, t = tt % t_in;
    pkf_dstore(y, dt, i, pkf_dload(x.p[j], dt, (b * t_in + t) * 3 * hd + s * hd + r * c + ci));
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  k<<<pkf_cu_blocks(pkf_cu_numel(&out[0])), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), ctx->rank,
                                                         ctx->world_size, out[0].data, out[0].dtype, in[0].shape[0],
                                                         in[0].shape[1], in[0].shape[2] / 3);
  return pkf_cu_finish(ctx, s);
}
