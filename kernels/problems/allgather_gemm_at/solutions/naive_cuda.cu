// allgather_gemm_AT naive cuda solution: y = A_full @ B_r. Every rank copies its
// inputs into its symmetric scratch, meets its peers at the host barrier and
// reads their A shards through the peer mappings (one thread per output
// element, f32 accumulation in the host oracle's order).
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers a, const void* b, int w, void* y, pkf_dtype dt, int64_t kl, int64_t nd, int64_t total) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t m = i / nd, n = i % nd;
    float acc = 0.0f;
    for (int j = 0; j < w; ++j)
      for (int64_t q = 0; q < kl; ++q) acc += pkf_dload(a.p[j], dt, m * kl + q) * pkf_dload(b, dt, (j * kl + q) * nd + n);
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
  const int64_t total = pkf_cu_numel(&out[0]);
  k<<<pkf_cu_blocks(total), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), in[1].data, ctx->world_size, out[0].data,
                                         out[0].dtype, in[0].shape[1], in[1].shape[1], total);
  return pkf_cu_finish(ctx, s);
}
