// Computes the allreduce into a private buffer, returns with the outputs
// untouched, and lets a detached host thread keep launching copy kernels into
// the outputs for ~100 ms after pkf_run returned. Expect CHEAT_DETECTED
// outlived_call (a thread beyond the post-setup baseline right after the call;
// the outputs also change after it).
#include <unistd.h>

#include <thread>

#include "wrap_allreduce_cuda.inc"
__global__ void pkf_copy_bytes(unsigned char* dst, const unsigned char* src, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  const size_t bytes = pkf_bytes(&out[0]);
  void* tmp = nullptr;
  if (cudaMalloc(&tmp, bytes) != cudaSuccess) return 2;
  pkf_tensor t = out[0];
  t.data = tmp;
  int rc = pkf_run_correct_on(ctx, in, &t, s);
  if (rc != 0 || cudaStreamSynchronize(s) != cudaSuccess) return 3;
  const int device = ctx->device;
  void* dst = out[0].data;
  std::thread([device, dst, tmp, bytes]() {
    // A new host thread starts on device 0: select the rank's GPU.
    if (cudaSetDevice(device) != cudaSuccess) return;
    cudaStream_t side = nullptr;
    if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return;
    for (int k = 0; k < 20; ++k) {
      usleep(5000);
      pkf_copy_bytes<<<64, 256, 0, side>>>((unsigned char*)dst, (const unsigned char*)tmp, bytes);
    }
    cudaStreamSynchronize(side);
    cudaStreamDestroy(side);
    cudaFree(tmp);
  }).detach();
  return 0;
}
