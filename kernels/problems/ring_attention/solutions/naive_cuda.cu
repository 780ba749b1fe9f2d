// ring_attention naive cuda solution: every rank copies q, k, v into its
// symmetric scratch and meets its peers at the host barrier; one thread per
// (batch, query, head) reads the keys and values of every earlier position
// through the peer mappings (two passes: max, then the weighted sum; f32).
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(const void* q, pkf_cu_peers kp, pkf_cu_peers vp, int r, void* out, pkf_dtype dt, int64_t bb,
                  int64_t s_len, int64_t nh, int64_t hd) {
  const float scale = 1.0f / sqrtf((float)hd);
  for (int64_t row = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; row < bb * s_len * nh;
       row += (int64_t)gridDim.x * blockDim.x) {
    const int64_t h = row % nh, i = (row / nh) % s_len, b = row / (nh * s_len), g = r * s_len + i;
    float mx = -INFINITY;
    for (int64_t p = 0; p <= g; ++p) {
      float dot = 0.0f;
      for (int64_t d = 0; d < hd; ++d)
        dot += pkf_dload(q, dt, row * hd + d) *
               pkf_dload(kp.p[p / s_len], dt, ((b * s_len + p % s_len) * nh + h) * hd + d);
      mx = fmaxf(mx, dot * scale);
    }
    for (int64_t d = 0; d < hd; ++d) {
      float acc = 0.0f, z = 0.0f;
      for (int64_t p = 0; p <= g; ++p) {
        float dot = 0.0f;
        for (int64_t e = 0; e < hd; ++e)
          dot += pkf_dload(q, dt, row * hd + e) *
                 pkf_dload(kp.p[p / s_len], dt, ((b * s_len + p % s_len) * nh + h) * hd + e);
        const float wgt = expf(dot * scale - mx);
        z += wgt;
        acc += wgt * pkf_dload(vp.p[p / s_len], dt, ((b * s_len + p % s_len) * nh + h) * hd + d);
      }
      pkf_dstore(out, dt, row * hd + d, acc / z);
    }
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t rows = in[0].shape[0] * in[0].shape[1] * in[0].shape[2];
  k<<<pkf_cu_blocks(rows), 256, 0, s>>>(in[0].data, pkf_cu_peer_input(ctx, peer_in, 1),
                                        pkf_cu_peer_input(ctx, peer_in, 2), ctx->rank, out[0].data, out[0].dtype,
                                        in[0].shape[0], in[0].shape[1], in[0].shape[2], in[0].shape[3]);
  return pkf_cu_finish(ctx, s);
}
