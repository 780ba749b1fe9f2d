// ddp cuda reference: common/mlp_adam.cuh (NCCL + cuBLAS f32 GEMMs + simple
// kernels). Written with the candidate ABI: it is also compiled as a
// candidate (ref_cuda_ddp.so).
#include "pkforge/candidate.h"
#include "../common/mlp_adam.cuh"

extern "C" int pkf_setup(pkf_context* ctx) { return pkf_gemm_setup(ctx); }
extern "C" void pkf_teardown(pkf_context* ctx) { pkf_gemm_teardown(ctx); }

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  return pkf_mlp_adam_cuda(ctx, in, out, (cudaStream_t)stream, 0);
}
