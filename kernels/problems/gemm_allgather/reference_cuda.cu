// gemm_allgather cuda reference, as PyTorch does matmul + all_gather +
// cat(dim=1): cublasGemmEx of the local column block into a staging buffer
// [M, N/world], ncclAllGather into [world][M][N/world], one permute kernel into
// y [M, N]. Written with the candidate ABI: it is also compiled as a candidate
// (ref_cuda_gemm_allgather.so).
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
  const int w = ctx->world_size;
  const int64_t m = in[0].shape[0], k = in[0].shape[1], nl = in[1].shape[1];
  const int64_t es = pkf_cu_elem(dt);
  if (cublasSetStream(st->handle, s) != CUBLAS_STATUS_SUCCESS) return 104;
  if (w == 1)  // the local block is all of y
    return pkf_gemm_rowmajor(st->handle, dt, m, nl, k, in[0].data, k, in[1].data, nl, out[0].data, nl, 0.0f);
  void* local = pkf_gemm_buffer(st, 0, (size_t)(m * nl * es));
  void* gathered = pkf_gemm_buffer(st, 1, (size_t)(w * m * nl * es));
  if (local == NULL || gathered == NULL) return 103;
  int rc = pkf_gemm_rowmajor(st->handle, dt, m, nl, k, in[0].data, k, in[1].data, nl, local, nl, 0.0f);
  if (rc != 0) return rc;
  PKF_NCCL(ncclAllGather(local, gathered, (size_t)(m * nl), pkf_nccl_type(dt), (ncclComm_t)ctx->nccl, s));
  return pkf_cu_cat_ranks(gathered, out[0].data, es, w, m, nl, s);
}
