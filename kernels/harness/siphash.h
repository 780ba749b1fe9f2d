// SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed pseudorandom function
// with a 128-bit key and a 64-bit output. The harness derives each call's
// input seed from the batch's secret seed with it (protocol.h BatchSeed): the
// generator of harness/rng.h is invertible (SplitMix64 is a bijection), so a
// candidate can recover a call's key from the call's inputs, and a key
// derived by an invertible function would give away the batch's seed and
// every other call's inputs; a PRF's output does not.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pkforge::kernels {

inline uint64_t SipRotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

// SipHash-2-4 of `len` bytes at `m` under the key (k0, k1) (the key's bytes
// little-endian: k0 = bytes 0-7).
inline uint64_t SipHash24(uint64_t k0, uint64_t k1, const unsigned char* m, size_t len) {
  uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
  uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
  auto round = [&] {
    v0 += v1;
    v1 = SipRotl(v1, 13) ^ v0;
    v0 = SipRotl(v0, 32);
    v2 += v3;
    v3 = SipRotl(v3, 16) ^ v2;
    v0 += v3;
    v3 = SipRotl(v3, 21) ^ v0;
    v2 += v1;
    v1 = SipRotl(v1, 17) ^ v2;
    v2 = SipRotl(v2, 32);
  };
  const size_t end = len - len % 8;
  for (size_t i = 0; i < end; i += 8) {
    uint64_t w = 0;
    for (int b = 0; b < 8; ++b) w |= static_cast<uint64_t>(m[i + b]) << (8 * b);
    v3 ^= w;
    round();
    round();
    v0 ^= w;
  }
  uint64_t last = static_cast<uint64_t>(len & 0xff) << 56;
  for (size_t i = end; i < len; ++i) last |= static_cast<uint64_t>(m[i]) << (8 * (i - end));
  v3 ^= last;
  round();
  round();
  v0 ^= last;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

// SipHash-2-4 of the 8 little-endian bytes of `x`.
inline uint64_t SipHash24(uint64_t k0, uint64_t k1, uint64_t x) {
  unsigned char m[8];
  for (int b = 0; b < 8; ++b) m[b] = static_cast<unsigned char>(x >> (8 * b));
  return SipHash24(k0, k1, m, sizeof m);
}

}  // namespace pkforge::kernels
