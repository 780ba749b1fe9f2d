// Row-major GEMM through cuBLAS for the cuda references: C[M,N] = A[M,K] @ B[K,N]
// (leading dimensions lda, ldb, ldc in elements), f32 accumulation
// (CUBLAS_COMPUTE_32F, no TF32), output rounded once to the dtype.
#ifndef PKFORGE_PROBLEMS_COMMON_CUBLAS_UTIL_CUH_
#define PKFORGE_PROBLEMS_COMMON_CUBLAS_UTIL_CUH_

#include <cublas_v2.h>

#include "cuda_util.cuh"

static inline cudaDataType_t pkf_cublas_type(pkf_dtype dt) {
  return dt == PKF_F32 ? CUDA_R_32F : dt == PKF_F16 ? CUDA_R_16F : CUDA_R_16BF;
}

static inline int pkf_gemm_rowmajor(cublasHandle_t h, pkf_dtype dt, int64_t m, int64_t n, int64_t k,
                                    const void* a, int64_t lda, const void* b, int64_t ldb, void* c,
                                    int64_t ldc, float beta) {
  const float alpha = 1.0f;
  const cudaDataType_t t = pkf_cublas_type(dt);
  // Row-major C = A B is column-major C^T = B^T A^T.
  cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, b, t,
                                   (int)ldb, a, t, (int)lda, &beta, c, t, (int)ldc,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return st == CUBLAS_STATUS_SUCCESS ? 0 : 102;
}

// Per-rank state of a GEMM reference: a cuBLAS handle and a growable buffer.
typedef struct {
  cublasHandle_t handle;
  void* buf[2];
  size_t cap[2];
} pkf_gemm_state;

static inline int pkf_gemm_setup(pkf_context* ctx) {
  pkf_gemm_state* s = (pkf_gemm_state*)calloc(1, sizeof(pkf_gemm_state));
  if (s == NULL) return 1;
  if (cublasCreate(&s->handle) != CUBLAS_STATUS_SUCCESS) return 2;
  ctx->user_state = s;
  return 0;
}
static inline void pkf_gemm_teardown(pkf_context* ctx) {
  pkf_gemm_state* s = (pkf_gemm_state*)ctx->user_state;
  if (s == NULL) return;
  cublasDestroy(s->handle);
  for (int i = 0; i < 2; ++i)
    if (s->buf[i]) cudaFree(s->buf[i]);
  free(s);
  ctx->user_state = NULL;
}
// A buffer of at least `bytes` (allocated on first use, then reused).
static inline void* pkf_gemm_buffer(pkf_gemm_state* s, int i, size_t bytes) {
  if (s->cap[i] < bytes) {
    if (s->buf[i]) cudaFree(s->buf[i]);
    s->buf[i] = NULL;
    s->cap[i] = 0;
    if (cudaMalloc(&s->buf[i], bytes) != cudaSuccess) return NULL;
    s->cap[i] = bytes;
  }
  return s->buf[i];
}

#endif  // PKFORGE_PROBLEMS_COMMON_CUBLAS_UTIL_CUH_
