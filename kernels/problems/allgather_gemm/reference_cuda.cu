// allgather_gemm cuda reference (ncclAllGather of the A shards, a permute into [M, K], one cuBLAS GEMM); the baseline candidates are timed
// against. Written with the candidate ABI: it is also compiled as a candidate
// (ref_cuda_allgather_gemm.so) for the identical-candidate checks.
#include "pkforge/candidate.h"
#include "../common/cublas_util.cuh"

extern "C" int pkf_setup(pkf_context* ctx) { return pkf_gemm_setup(ctx); }
extern "C" void pkf_teardown(pkf_context* ctx) { pkf_gemm_teardown(ctx); }

// g[j][m][k] (rank-major, as gathered) -> a[m][j*kl + k]
__global__ void pkf_permute(const void* g, void* a, pkf_dtype dt, int64_t w, int64_t m, int64_t kl) {
  const int64_t n = w * m * kl;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t j = i / (m * kl), r = (i / kl) % m, k = i % kl;
    const int64_t es = dt == PKF_F32 ? 4 : 2;
    if (es == 4) ((float*)a)[r * w * kl + j * kl + k] = ((const float*)g)[i];
    else ((uint16_t*)a)[r * w * kl + j * kl + k] = ((const uint16_t*)g)[i];
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_gemm_state* st = (pkf_gemm_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int64_t m = in[0].shape[0], kl = in[0].shape[1], n = in[1].shape[1], w = ctx->world_size;
  const size_t bytes = (size_t)(w * m * kl * pkf_cu_elem(dt));
  void* g = pkf_gemm_buffer(st, 0, bytes);
  void* a = pkf_gemm_buffer(st, 1, bytes);
  if (g == NULL || a == NULL) return 103;
  PKF_NCCL(ncclAllGather(in[0].data, g, (size_t)(m * kl), pkf_nccl_type(dt), (ncclComm_t)ctx->nccl, s));
  pkf_permute<<<pkf_cu_blocks(w * m * kl), 256, 0, s>>>(g, a, dt, w, m, kl);
  PKF_CU(cudaGetLastError());
  if (cublasSetStream(st->handle, s) != CUBLAS_STATUS_SUCCESS) return 104;
  return pkf_gemm_rowmajor(st->handle, dt, m, n, w * kl, a, w * kl, in[1].data, n, out[0].data, n, 0.0f);
}
