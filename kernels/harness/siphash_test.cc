#include "kernels/harness/siphash.h"

#include <set>

#include "gtest/gtest.h"
#include "kernels/harness/protocol.h"

namespace pkforge::kernels {
namespace {

// The reference vectors (key = bytes 00..0f): the paper's 15-byte example
// (00..0e -> a129ca6149be45e5), the empty message, 8 bytes (00..07).
TEST(SipHash, ReferenceVectors) {
  const uint64_t k0 = 0x0706050403020100ull, k1 = 0x0f0e0d0c0b0a0908ull;
  unsigned char m[15];
  for (int i = 0; i < 15; ++i) m[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(SipHash24(k0, k1, m, 15), 0xa129ca6149be45e5ull);
  EXPECT_EQ(SipHash24(k0, k1, m, 0), 0x726fdb47dd0e0e31ull);
  EXPECT_EQ(SipHash24(k0, k1, m, 8), 0x93f5f5799a932462ull);
  EXPECT_EQ(SipHash24(k0, k1, 0x0706050403020100ull), 0x93f5f5799a932462ull);
}

// SplitMix64's finalizer undone (it is a bijection): what a candidate that
// recovered one call's key from the call's inputs (harness/rng.h: 24 bits of
// SplitMix64 per f32 element, 2^40 tries) would apply next.
uint64_t InverseOdd(uint64_t a) {
  uint64_t x = a;  // Newton: x = x (2 - a x), doubling the correct bits
  for (int i = 0; i < 6; ++i) x *= 2 - a * x;
  return x;
}
uint64_t UndoXorShift(uint64_t y, int s) {
  uint64_t x = y;
  for (int i = 0; i < 64 / s + 1; ++i) x = y ^ (x >> s);
  return x;
}
uint64_t UnMix(uint64_t z) {
  z = UndoXorShift(z, 31);
  z *= InverseOdd(0x94d049bb133111ebull);
  z = UndoXorShift(z, 27);
  z *= InverseOdd(0xbf58476d1ce4e5b9ull);
  return UndoXorShift(z, 30);
}

// The per-call seeds of a batch are a PRF of its secret seed: one call's key
// undone as the old derivation (SplitMix64 of seed + gamma (k + 1)) would be
// gives neither the seed nor the next call's key. With the old derivation it
// gave both (red team round 28, finding 7: a drip batch's later inputs known
// from its first call's).
TEST(SipHash, OneCallsKeyDoesNotGiveAwayTheBatchSeed) {
  const uint64_t gamma = 0x9e3779b97f4a7c15ull;
  // The inversion itself works on the old derivation.
  const uint64_t s = 0x1234567890abcdefull;
  auto old_batch_seed = [&](uint64_t seed, uint32_t k) {
    uint64_t z = seed + gamma * (uint64_t{k} + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  ASSERT_EQ(UnMix(old_batch_seed(s, 0)) - gamma, s);
  // And recovers nothing from BatchSeed.
  for (uint64_t seed : {s, uint64_t{0}, ~uint64_t{0}, uint64_t{42}}) {
    const uint64_t guess = UnMix(BatchSeed(seed, 0)) - gamma;
    EXPECT_NE(guess, seed);
    EXPECT_NE(BatchSeed(guess, 1), BatchSeed(seed, 1));
  }
  // Distinct per call and per seed.
  std::set<uint64_t> keys;
  for (uint64_t seed = 0; seed < 16; ++seed)
    for (uint32_t k = 0; k < 64; ++k) keys.insert(BatchSeed(seed, k));
  EXPECT_EQ(keys.size(), 16u * 64u);
}

}  // namespace
}  // namespace pkforge::kernels
