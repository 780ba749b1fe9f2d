// fused_adam_allgather cuda reference, as a strong PyTorch user writes it
// (a fused Adam kernel whose weight output is this rank's slot of the gathered
// tensor, then an in-place all_gather_into_tensor): one element-wise kernel
// writes m, v and w' (w' straight into params[rank*P ...]), then one in-place
// ncclAllGather (sendbuff = recvbuff + rank*P). Written with the candidate ABI:
// it is also compiled as a candidate (ref_cuda_fused_adam_allgather.so).
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

// No state (every reference exports setup and teardown).
extern "C" int pkf_setup(pkf_context* ctx) {
  (void)ctx;
  return 0;
}
extern "C" void pkf_teardown(pkf_context* ctx) { (void)ctx; }

__global__ void pkf_adam_shard(const void* g, const void* w, void* w_out, void* m_out, void* v_out, pkf_dtype dt,
                               int64_t p) {
  const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  const float bc1 = 1.0f - b1, bc2 = 1.0f - b2;  // step 1
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p; i += (int64_t)gridDim.x * blockDim.x) {
    const float gi = pkf_dload(g, dt, i);
    const float m = (1.0f - b1) * gi, v = (1.0f - b2) * gi * gi;
    const float m_hat = m / bc1, v_hat = v / bc2;
    pkf_dstore(w_out, dt, i, pkf_dload(w, dt, i) + (-lr) * (m_hat / (sqrtf(v_hat) + eps)));
    pkf_dstore(m_out, dt, i, m);
    pkf_dstore(v_out, dt, i, v);
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int64_t p = in[0].shape[0], es = pkf_cu_elem(dt);
  char* mine = (char*)out[0].data + ctx->rank * p * es;
  pkf_adam_shard<<<pkf_cu_blocks(p), 256, 0, s>>>(in[0].data, in[1].data, mine, out[1].data, out[2].data, dt, p);
  PKF_CU(cudaGetLastError());
  if (ctx->world_size > 1)
    PKF_NCCL(ncclAllGather(mine, out[0].data, (size_t)p, pkf_nccl_type(dt), (ncclComm_t)ctx->nccl, s));
  return 0;
}
