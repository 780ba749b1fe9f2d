// gnn_feature_exchange naive cuda solution: every rank copies its features
// and ids into its symmetric scratch and meets its peers at the host barrier;
// one thread per output element then reads the sending rank's id and feature
// through the peer mappings.
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers feat, pkf_cu_peers ids, int w, int r, int64_t rows, int64_t h, void* y,
                  pkf_dtype dt) {
  const int64_t total = (int64_t)w * rows * h;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = e / h, c = row / rows, j = row % rows;
    const int i = (int)((r + c) % w), kk = (int)((w - c) % w);
    const long long id = ((const long long*)ids.p[i])[kk * rows + j];
    pkf_dstore(y, dt, e, pkf_dload(feat.p[i], dt, id * h + e % h));
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int w = ctx->world_size;
  const int64_t rows = in[1].shape[0] / w, h = in[0].shape[1];
  k<<<pkf_cu_blocks(w * rows * h), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), pkf_cu_peer_input(ctx, peer_in, 1),
                                                w, ctx->rank, rows, h, out[0].data, out[0].dtype);
  return pkf_cu_finish(ctx, s);
}
