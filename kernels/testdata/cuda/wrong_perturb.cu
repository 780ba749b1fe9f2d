// Wrong candidate: the correct allreduce, then element numel/2 of output 0 is
// increased by 0.5 on rank world-1 (a one-thread kernel on the call's
// stream). Tests expect WRONG_OUTPUT naming that rank and index with
// expected/actual (run with --dtype f32, where +0.5 is exact).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "wrap_allreduce_cuda.inc"
__global__ void pkf_perturb(void* p, pkf_dtype dt, size_t i) {
  if (dt == PKF_F32) {
    ((float*)p)[i] += 0.5f;
  } else if (dt == PKF_F16) {
    __half* h = (__half*)p;
    h[i] = __float2half(__half2float(h[i]) + 0.5f);
  } else {
    __nv_bfloat16* b = (__nv_bfloat16*)p;
    b[i] = __float2bfloat16(__bfloat162float(b[i]) + 0.5f);
  }
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  int rc = pkf_run_correct_on(ctx, in, out, s);
  if (rc != 0 || ctx->rank != ctx->world_size - 1) return rc;
  pkf_perturb<<<1, 1, 0, s>>>(out[0].data, out[0].dtype, pkf_n(&out[0]) / 2);
  return cudaGetLastError() != cudaSuccess;
}
