// gemv_decode cuda reference, as PyTorch does matmul(hidden, weight.t()) + bias,
// all_gather, cat(dim=1) (with the bias folded into the GEMM): the local logits
// [T, V] are pre-filled with the bias and one cublasGemmEx (weight transposed,
// f32 accumulation, beta 1) adds hidden @ weight^T; ncclAllGather into
// [world][T][V]; at T = 1 (decode) that is already the [1, world*V] layout and
// the gather lands in the output, otherwise one permute kernel writes
// logits [T, world*V]. At world 1 the GEMM writes the output. Written with the
// candidate ABI: it is also compiled as a candidate (ref_cuda_gemv_decode.so).
#include "pkforge/candidate.h"
#include "../common/cublas_util.cuh"

extern "C" int pkf_setup(pkf_context* ctx) { return pkf_gemm_setup(ctx); }
extern "C" void pkf_teardown(pkf_context* ctx) { pkf_gemm_teardown(ctx); }

template <typename T>
__global__ void pkf_gemv_bias(const T* bias, T* y, int64_t t_n, int64_t v_n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < t_n * v_n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = bias[i % v_n];
}

// y [T, V] = bias (broadcast over rows) + hidden [T, H] @ weight [V, H]^T.
static int pkf_gemv_local(cublasHandle_t h, pkf_dtype dt, const pkf_tensor* in, void* y, cudaStream_t s) {
  const int64_t t_n = in[0].shape[0], hd = in[0].shape[1], v_n = in[1].shape[0];
  if (dt == PKF_F32)
    pkf_gemv_bias<<<pkf_cu_blocks(t_n * v_n), 256, 0, s>>>((const float*)in[2].data, (float*)y, t_n, v_n);
  else
    pkf_gemv_bias<<<pkf_cu_blocks(t_n * v_n), 256, 0, s>>>((const uint16_t*)in[2].data, (uint16_t*)y, t_n, v_n);
  PKF_CU(cudaGetLastError());
  // Column-major view: y^T [V, T] = A^T B with A = the row-major weight seen
  // as column-major [H, V] (ld H) and B = hidden seen as [H, T] (ld H).
  const float alpha = 1.0f, beta = 1.0f;
  const cudaDataType_t ct = pkf_cublas_type(dt);
  const cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)v_n, (int)t_n, (int)hd, &alpha,
                                         in[1].data, ct, (int)hd, in[0].data, ct, (int)hd, &beta, y, ct,
                                         (int)v_n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return st == CUBLAS_STATUS_SUCCESS ? 0 : 102;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_gemm_state* st = (pkf_gemm_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int w = ctx->world_size;
  const int64_t t_n = in[0].shape[0], v_n = in[1].shape[0], es = pkf_cu_elem(dt);
  if (cublasSetStream(st->handle, s) != CUBLAS_STATUS_SUCCESS) return 104;
  if (w == 1) return pkf_gemv_local(st->handle, dt, in, out[0].data, s);
  void* local = pkf_gemm_buffer(st, 0, (size_t)(t_n * v_n * es));
  if (local == NULL) return 103;
  int rc = pkf_gemv_local(st->handle, dt, in, local, s);
  if (rc != 0) return rc;
  if (t_n == 1) {
    PKF_NCCL(ncclAllGather(local, out[0].data, (size_t)v_n, pkf_nccl_type(dt), (ncclComm_t)ctx->nccl, s));
    return 0;
  }
  void* gathered = pkf_gemm_buffer(st, 1, (size_t)(w * t_n * v_n * es));
  if (gathered == NULL) return 103;
  PKF_NCCL(ncclAllGather(local, gathered, (size_t)(t_n * v_n), pkf_nccl_type(dt), (ncclComm_t)ctx->nccl, s));
  return pkf_cu_cat_ranks(gathered, out[0].data, es, w, t_n, v_n, s);
}
