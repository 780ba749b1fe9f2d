// Rank 0 launches a kernel that writes through a pointer into unmapped device
// address space and returns 0; the fault surfaces when the harness
// synchronizes the call's stop event (a sticky cudaErrorIllegalAddress). Other
// ranks run the allreduce and wait for rank 0 in NCCL. Expect RUNTIME_ERROR
// naming rank 0 and the CUDA error, and a healthy GPU afterwards.
#include "wrap_allreduce_cuda.inc"
__global__ void pkf_write_through(float* p) { p[threadIdx.x] = 1.0f; }
// Volatile so the compiler cannot see (and "optimize") the bad store.
static volatile unsigned long long bad_address = 0x10;
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (ctx->rank == 0) {
    pkf_write_through<<<1, 32, 0, s>>>((float*)(uintptr_t)bad_address);
    return 0;
  }
  return pkf_run_correct_on(ctx, in, out, s);
}
