// Counter-based input generator shared by the host and the device.
//
// Contract: value(seed, stream, index) is a pure function of its arguments, so
// the host generator and the CUDA kernel (which includes this header) produce
// bit-identical inputs with no state and in any order. A stream identifies one
// tensor of one rank: stream = (rank << 8) | input_index, or
// (kReplicatedRank << 8) | input_index for tensors that must be identical on
// every rank (a replicated GEMM operand). Values are uniform in [-1, 1) with
// 24 random bits, exactly representable in f32, then rounded once to the dtype.
// Integer tensors (ids, indices, labels) take GenInt: uniform in the tensor's
// [lo, hi) from 64 random bits of the same stream (TensorDesc, problem.h).
// The seed is the secret: it lives only in the judge and the trusted
// reference-rank processes (kernels/README.md).
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define PKF_HD __host__ __device__ __forceinline__
#else
#define PKF_HD inline
#endif

namespace pkforge::kernels {

inline constexpr uint32_t kReplicatedRank = 0xffffff;

PKF_HD uint64_t SplitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

PKF_HD uint64_t StreamKey(uint64_t seed, uint32_t rank, uint32_t input) {
  return SplitMix64(seed ^ SplitMix64((static_cast<uint64_t>(rank) << 8) | input));
}

// Uniform f32 in [-1, 1) for element `index` of the stream with key `key`.
PKF_HD float GenValue(uint64_t key, uint64_t index) {
  uint64_t h = SplitMix64(key + index * 0xd1b54a32d192ed03ull);
  return static_cast<float>(static_cast<int32_t>(h >> 40)) * (1.0f / 8388608.0f) - 1.0f;
}

// Uniform integer in [lo, hi) (hi > lo) for element `index` of the stream
// with key `key`; the modulo bias is below 2^-32 for any range a tensor uses.
// A range with hi <= lo gives lo.
PKF_HD int64_t GenInt(uint64_t key, uint64_t index, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  const uint64_t h = SplitMix64(key + index * 0xd1b54a32d192ed03ull);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + h % span);
}

}  // namespace pkforge::kernels
