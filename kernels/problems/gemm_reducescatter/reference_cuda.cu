// gemm_reducescatter cuda reference (local cuBLAS GEMM into a [M, N] partial, then ncclReduceScatter); the baseline candidates are timed
// against. Written with the candidate ABI: it is also compiled as a candidate
// (ref_cuda_gemm_reducescatter.so) for the identical-candidate checks.
#include "pkforge/candidate.h"
#include "../common/cublas_util.cuh"

extern "C" int pkf_setup(pkf_context* ctx) { return pkf_gemm_setup(ctx); }
extern "C" void pkf_teardown(pkf_context* ctx) { pkf_gemm_teardown(ctx); }

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_gemm_state* st = (pkf_gemm_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int64_t m = in[0].shape[0], kl = in[0].shape[1], n = in[1].shape[1];
  void* p = pkf_gemm_buffer(st, 0, (size_t)(m * n * pkf_cu_elem(dt)));
  if (p == NULL) return 103;
  if (cublasSetStream(st->handle, s) != CUBLAS_STATUS_SUCCESS) return 104;
  int rc = pkf_gemm_rowmajor(st->handle, dt, m, n, kl, in[0].data, kl, in[1].data, n, p, n, 0.0f);
  if (rc != 0) return rc;
  PKF_NCCL(ncclReduceScatter(p, out[0].data, (size_t)pkf_cu_numel(&out[0]), pkf_nccl_type(dt), ncclSum,
                             (ncclComm_t)ctx->nccl, s));
  return 0;
}
