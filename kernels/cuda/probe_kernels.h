// Device code of `pkforge-cuda-rank probe|health` (probe_cuda.cc is host C++
// compiled by g++; it calls these launchers). Each launcher only enqueues on
// `stream` and returns the launch error.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace pkforge::kernels::cuda {

// dst[i] = bf16 of a hash of (seed, i) in [-1, 1): GEMM operands for the
// bf16 throughput measurement. Zeros would understate power draw and let the
// clocks boost above what real data sustains.
cudaError_t FillBf16Pattern(void* dst, int64_t n, uint32_t seed, cudaStream_t stream);

// y[i] = a * x[i] + i for i < n, grid-stride over `blocks` blocks: the health
// check's known kernel (every SM runs some of it).
cudaError_t LaunchAxpyIndex(const float* x, float* y, float a, int64_t n, int blocks,
                            cudaStream_t stream);

}  // namespace pkforge::kernels::cuda
