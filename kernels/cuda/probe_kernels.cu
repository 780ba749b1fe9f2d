#include "kernels/cuda/probe_kernels.h"

#include <cuda_bf16.h>

namespace pkforge::kernels::cuda {
namespace {

__global__ void FillBf16Kernel(__nv_bfloat16* dst, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // splitmix-style finalizer: cheap, well mixed, no state.
    uint64_t z = static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull + seed;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const float v = static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
    dst[i] = __float2bfloat16(v);
  }
}

__global__ void AxpyIndexKernel(const float* x, float* y, float a, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = a * x[i] + static_cast<float>(i);
}

}  // namespace

cudaError_t FillBf16Pattern(void* dst, int64_t n, uint32_t seed, cudaStream_t stream) {
  FillBf16Kernel<<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(dst), n, seed);
  return cudaGetLastError();
}

cudaError_t LaunchAxpyIndex(const float* x, float* y, float a, int64_t n, int blocks,
                            cudaStream_t stream) {
  AxpyIndexKernel<<<blocks > 0 ? blocks : 1, 256, 0, stream>>>(x, y, a, n);
  return cudaGetLastError();
}

}  // namespace pkforge::kernels::cuda
