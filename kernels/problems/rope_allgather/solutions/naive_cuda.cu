// rope_allgather naive cuda solution: every rank copies its inputs into its
// symmetric scratch and meets its peers at the host barrier; one thread per
// output element then reads the owning rank's q or k, cos and sin through the
// peer mapping and rotates it (f32, rounded once).
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers q, pkf_cu_peers kk, pkf_cu_peers cs, pkf_cu_peers sn, int w, void* yq,
                  void* yk, pkf_dtype dt, int64_t b_n, int64_t s_n, int64_t nh, int64_t d_n) {
  const int64_t per_out = b_n * w * s_n * nh * d_n;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < 2 * per_out;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int t = i >= per_out;
    const int64_t o = i - t * per_out, d = o % d_n, h = (o / d_n) % nh;
    const int64_t p = (o / (d_n * nh)) % (w * s_n), b = o / (d_n * nh * w * s_n);
    const int j = (int)(p / s_n);
    const int64_t s = p % s_n, row = ((b * s_n + s) * nh + h) * d_n, pos = (b * s_n + s) * d_n + d;
    const void* x = t ? kk.p[j] : q.p[j];
    const float rot = d < d_n / 2 ? -pkf_dload(x, dt, row + d + d_n / 2) : pkf_dload(x, dt, row + d - d_n / 2);
    pkf_dstore(t ? yk : yq, dt, o, pkf_dload(x, dt, row + d) * pkf_dload(cs.p[j], dt, pos) +
                                       rot * pkf_dload(sn.p[j], dt, pos));
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t b_n = in[0].shape[0], s_n = in[0].shape[1], nh = in[0].shape[2], d_n = in[0].shape[3];
  k<<<pkf_cu_blocks(2 * pkf_cu_numel(&out[0])), 256, 0, s>>>(
      pkf_cu_peer_input(ctx, peer_in, 0), pkf_cu_peer_input(ctx, peer_in, 1), pkf_cu_peer_input(ctx, peer_in, 2),
      pkf_cu_peer_input(ctx, peer_in, 3), ctx->world_size, out[0].data, out[1].data, out[0].dtype, b_n, s_n, nh,
      d_n);
  return pkf_cu_finish(ctx, s);
}
