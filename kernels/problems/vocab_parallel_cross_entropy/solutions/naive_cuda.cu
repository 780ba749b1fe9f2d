// vocab_parallel_cross_entropy naive cuda solution: every rank copies its
// logits into its symmetric scratch and meets its peers at the host barrier;
// one thread per row then walks every rank's shard through the peer mappings
// (max, sum of exponentials, target logit, f32) and writes the loss.
#include <math.h>

#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers x, const long long* target, int w, int64_t rows, int64_t vl, void* loss,
                  pkf_dtype dt) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows; i += (int64_t)gridDim.x * blockDim.x) {
    float m = -INFINITY;
    for (int j = 0; j < w; ++j)
      for (int64_t v = 0; v < vl; ++v) m = fmaxf(m, pkf_dload(x.p[j], dt, i * vl + v));
    float s = 0;
    for (int j = 0; j < w; ++j)
      for (int64_t v = 0; v < vl; ++v) s += expf(pkf_dload(x.p[j], dt, i * vl + v) - m);
    const long long t = target[i];
    pkf_dstore(loss, dt, i, logf(s) - (pkf_dload(x.p[t / vl], dt, i * vl + t % vl) - m));
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t rows = in[0].shape[0] * in[0].shape[1], vl = in[0].shape[2];
  k<<<pkf_cu_blocks(rows), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), (const long long*)in[1].data,
                                        ctx->world_size, rows, vl, out[0].data, out[0].dtype);
  return pkf_cu_finish(ctx, s);
}
