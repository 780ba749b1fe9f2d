// gemm_allgather naive cuda solution: y[:, j*NL:(j+1)*NL] = A @ B_j.
// Every rank copies its inputs into its symmetric scratch, meets its peers at
// the host barrier and then reads their weight shards through the peer
// mappings (one thread per output element, f32 accumulation in the host
// oracle's order).
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(const void* a, pkf_cu_peers b, int w, void* y, pkf_dtype dt, int64_t kd, int64_t nl, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t m = i / (w * nl), col = i % (w * nl), j = col / nl, c = col % nl;
    float acc = 0.0f;
    for (int64_t q = 0; q < kd; ++q) acc += pkf_dload(a, dt, m * kd + q) * pkf_dload(b.p[j], dt, q * nl + c);
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
  const int64_t n = pkf_cu_numel(&out[0]);
  k<<<pkf_cu_blocks(n), 256, 0, s>>>(in[0].data, pkf_cu_peer_input(ctx, peer_in, 1), ctx->world_size, out[0].data,
                                     out[0].dtype, in[0].shape[1], in[1].shape[1], n);
  return pkf_cu_finish(ctx, s);
}
