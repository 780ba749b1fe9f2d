// combined_sharded_gemms cuda reference, PKB's PyTorch code as a strong user
// writes it: ncclAllGather of the hidden shards, one permute kernel that
// assembles only this rank's rows X[R] [M/world, H], cublasGemmEx with an
// f32 output (z stays in f32), a silu kernel into the dtype, cublasGemmEx
// straight into y (PKB's zero buffer + reduce-scatter only returns this
// rank's own block, so it is skipped). GEMMs: f32 compute, no TF32. Written with the
// candidate ABI: it is also compiled as a candidate (ref_cuda_combined_sharded_gemms.so).
#include "pkforge/candidate.h"
#include "../common/cublas_util.cuh"

extern "C" int pkf_setup(pkf_context* ctx) { return pkf_gemm_setup(ctx); }
extern "C" void pkf_teardown(pkf_context* ctx) { pkf_gemm_teardown(ctx); }

// gathered [w][M][hl] -> xr [rows][w*hl] for rows [r*rows, (r+1)*rows), in units of T.
template <typename T>
__global__ void pkf_csg_rows(const T* gathered, T* xr, int w, int r, int64_t m, int64_t rows, int64_t hl) {
  const int64_t total = rows * w * hl;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = i / (w * hl), rest = i % (w * hl), j = rest / hl, k = rest % hl;
    xr[i] = gathered[(j * m + r * rows + row) * hl + k];
  }
}

__global__ void pkf_csg_silu(const float* z, void* a, pkf_dtype dt, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    pkf_dstore(a, dt, i, z[i] / (1.0f + __expf(-z[i])));
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_gemm_state* st = (pkf_gemm_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int w = ctx->world_size;
  const int64_t m = in[0].shape[0], hl = in[0].shape[1], h = in[1].shape[0], f = in[1].shape[1];
  const int64_t rows = out[0].shape[0], es = pkf_cu_elem(dt);
  const size_t xr_bytes = (size_t)((rows * h * es + 255) / 256 * 256);
  const size_t z_bytes = (size_t)((rows * f * 4 + 255) / 256 * 256);
  char* work = (char*)pkf_gemm_buffer(st, 1, xr_bytes + z_bytes + (size_t)(rows * f * es));
  if (work == NULL) return 103;
  void* xr = work;
  float* z = (float*)(work + xr_bytes);
  void* a = work + xr_bytes + z_bytes;
  const void* gathered = in[0].data;
  if (w > 1) {
    void* g = pkf_gemm_buffer(st, 0, (size_t)(w * m * hl * es));
    if (g == NULL) return 103;
    PKF_NCCL(ncclAllGather(in[0].data, g, (size_t)(m * hl), pkf_nccl_type(dt), (ncclComm_t)ctx->nccl, s));
    gathered = g;
  }
  const int blocks = pkf_cu_blocks(rows * h);
  if (es == 4)
    pkf_csg_rows<<<blocks, 256, 0, s>>>((const float*)gathered, (float*)xr, w, ctx->rank, m, rows, hl);
  else
    pkf_csg_rows<<<blocks, 256, 0, s>>>((const uint16_t*)gathered, (uint16_t*)xr, w, ctx->rank, m, rows, hl);
  PKF_CU(cudaGetLastError());
  if (cublasSetStream(st->handle, s) != CUBLAS_STATUS_SUCCESS) return 104;
  // z [rows, F] = X[R] @ W1 in f32 (row-major: column-major z^T = W1^T x X[R]^T).
  const float one = 1.0f, zero = 0.0f;
  const cudaDataType_t t = pkf_cublas_type(dt);
  if (cublasGemmEx(st->handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)f, (int)rows, (int)h, &one, in[1].data, t, (int)f, xr,
                   t, (int)h, &zero, z, CUDA_R_32F, (int)f, CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
    return 102;
  pkf_csg_silu<<<pkf_cu_blocks(rows * f), 256, 0, s>>>(z, a, dt, rows * f);
  PKF_CU(cudaGetLastError());
  return pkf_gemm_rowmajor(st->handle, dt, rows, h, f, a, f, in[2].data, h, out[0].data, h, 0.0f);
}
