// allgather_gemm_at cuda reference, as PKB's PyTorch code does it: transpose
// the local shard A_r [M, K/world] into A_r^T [K/world, M] (one kernel),
// ncclAllGather of the transposed shards straight into A^T [K, M] (rank blocks
// are rows: no permute), then one cublasGemmEx y^T = B^T @ A^T (f32 compute,
// no TF32, output in the dtype). Written with the candidate ABI: it is also
// compiled as a candidate (ref_cuda_allgather_gemm_at.so).
#include "pkforge/candidate.h"
#include "../common/cublas_util.cuh"

extern "C" int pkf_setup(pkf_context* ctx) { return pkf_gemm_setup(ctx); }
extern "C" void pkf_teardown(pkf_context* ctx) { pkf_gemm_teardown(ctx); }

// a [m][kl] -> at [kl][m] through a 32x32 shared tile, in units of T.
template <typename T>
__global__ void pkf_agat_transpose(const T* a, T* at, int64_t m, int64_t kl) {
  __shared__ T tile[32][33];
  const int64_t r0 = blockIdx.y * 32, c0 = blockIdx.x * 32;
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int64_t r = r0 + y, c = c0 + threadIdx.x;
    if (r < m && c < kl) tile[y][threadIdx.x] = a[r * kl + c];
  }
  __syncthreads();
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int64_t c = c0 + y, r = r0 + threadIdx.x;
    if (r < m && c < kl) at[c * m + r] = tile[threadIdx.x][y];
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_gemm_state* st = (pkf_gemm_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int64_t m = in[0].shape[0], kl = in[0].shape[1], n = in[1].shape[1], w = ctx->world_size;
  const int64_t es = pkf_cu_elem(dt);
  void* at_local = pkf_gemm_buffer(st, 0, (size_t)(m * kl * es));
  void* at = pkf_gemm_buffer(st, 1, (size_t)(w * m * kl * es));
  if (at_local == NULL || at == NULL) return 103;
  const dim3 grid((unsigned)((kl + 31) / 32), (unsigned)((m + 31) / 32)), block(32, 8);
  if (es == 4)
    pkf_agat_transpose<<<grid, block, 0, s>>>((const float*)in[0].data, (float*)(w == 1 ? at : at_local), m, kl);
  else
    pkf_agat_transpose<<<grid, block, 0, s>>>((const uint16_t*)in[0].data, (uint16_t*)(w == 1 ? at : at_local), m,
                                              kl);
  PKF_CU(cudaGetLastError());
  if (w > 1)
    PKF_NCCL(ncclAllGather(at_local, at, (size_t)(m * kl), pkf_nccl_type(dt), (ncclComm_t)ctx->nccl, s));
  if (cublasSetStream(st->handle, s) != CUBLAS_STATUS_SUCCESS) return 104;
  // Column-major view: y^T [N, M] = B^T [N, K] (B row-major [K, N], ld N, no op)
  // times A^T [K, M] (stored row-major [K, M] = column-major [M, K], ld M, op T).
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t t = pkf_cublas_type(dt);
  const cublasStatus_t cs = cublasGemmEx(st->handle, CUBLAS_OP_N, CUBLAS_OP_T, (int)n, (int)m, (int)(w * kl),
                                         &alpha, in[1].data, t, (int)n, at, t, (int)m, &beta, out[0].data, t,
                                         (int)n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return cs == CUBLAS_STATUS_SUCCESS ? 0 : 102;
}
