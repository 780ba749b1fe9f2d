// sample_sort naive cuda solution: every rank copies its shard into its
// symmetric scratch and meets its peers at the host barrier; one thread per
// element of all shards then computes its global position (smaller elements
// plus equal ones earlier in (rank, index) order) and writes it if it lands
// in this rank's block.
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers x, int w, int64_t n, int r, void* y, pkf_dtype dt) {
  const int64_t total = (int64_t)w * n;
  for (int64_t a = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; a < total; a += (int64_t)gridDim.x * blockDim.x) {
    const float v = pkf_dload(x.p[a / n], dt, a % n);
    int64_t pos = 0;
    for (int64_t b = 0; b < total; ++b) {
      const float u = pkf_dload(x.p[b / n], dt, b % n);
      pos += u < v || (u == v && b < a);
    }
    if (pos >= r * n && pos < (r + 1) * n) pkf_dstore(y, dt, pos - r * n, v);
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t n = in[0].shape[0];
  k<<<pkf_cu_blocks(ctx->world_size * n), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), ctx->world_size, n,
                                                      ctx->rank, out[0].data, out[0].dtype);
  return pkf_cu_finish(ctx, s);
}
