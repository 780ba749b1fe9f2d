// ATTACK (starving the reference, cuda): pkf_setup launches a persistent
// kernel on a side stream that spins on every SM until pkf_teardown sets a
// flag in mapped host memory: the reference's kernels share the GPU with it
// (time slicing between contexts) while the reference is timed.
// EXPECT: CHEAT_DETECTED outlived_call (the judge's empty kernel finds the GPU
// busy after a call).
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
static cudaStream_t side;
static volatile int* stop_flag = nullptr;
__global__ void hog(volatile int* stop) {
  while (*stop == 0) {
    const long long t0 = clock64();
    while (clock64() - t0 < 100000) {
    }
  }
}
extern "C" int pkf_setup(pkf_context* ctx) {
  if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 1;
  if (cudaHostAlloc((void**)&stop_flag, sizeof(int), cudaHostAllocMapped) != cudaSuccess) return 2;
  *stop_flag = 0;
  int* dev = nullptr;
  cudaHostGetDevicePointer((void**)&dev, (void*)stop_flag, 0);
  hog<<<ctx->num_sms > 0 ? ctx->num_sms : 132, 1024, 0, side>>>(dev);
  return cudaGetLastError() != cudaSuccess;
}
extern "C" void pkf_teardown(pkf_context*) {
  if (stop_flag != nullptr) *stop_flag = 1;
  cudaStreamSynchronize(side);
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  return pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
}
