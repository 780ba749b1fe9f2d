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
// Float tensors with a declared range (FloatInput, problem.h) take GenFloat:
// the range is fixed point with 24 fraction bits held in the same two int64
// fields, and the value is drawn with integer arithmetic only (exactly the
// same on host and device: no rounding, no FMA contraction), then converted
// exactly to double and rounded once to f32 (and once more to the dtype).
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

// Fixed-point scale of float ranges: lo/hi hold round(x * 2^24).
inline constexpr double kFloatRangeScale = 16777216.0;

// Element `index` of a float tensor whose range is (lo, hi) in fixed point
// (kFloatRangeScale units, FloatInput in problem.h):
//   lo == hi:  the default, uniform in [-1, 1) (GenValue);
//   lo <  hi:  uniform in [lo, hi) on the 2^-24 grid;
//   lo >  hi:  "mirrored": magnitude uniform in [hi, lo) (hi >= 0), sign from
//              the low bit, i.e. uniform on (-lo, -hi] U [hi, lo): a range
//              with a gap around zero.
// The result is the f32 rounding of an exact double (|value| < 2^29 is exact
// before that rounding), so host and device agree bit for bit.
PKF_HD float GenFloat(uint64_t key, uint64_t index, int64_t lo, int64_t hi) {
  if (lo == hi) return GenValue(key, index);
  const bool mirrored = lo > hi;
  const int64_t a = mirrored ? hi : lo, b = mirrored ? lo : hi;
  const uint64_t span = static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
  const uint64_t h = SplitMix64(key + index * 0xd1b54a32d192ed03ull);
  int64_t fx = static_cast<int64_t>(static_cast<uint64_t>(a) + (h >> 1) % span);
  if (mirrored && (h & 1)) fx = -fx;
  return static_cast<float>(static_cast<double>(fx) * (1.0 / kFloatRangeScale));
}

}  // namespace pkforge::kernels
