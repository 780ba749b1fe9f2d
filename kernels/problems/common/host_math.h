// Host-side element helpers shared by the problem suite's host references and
// naive host solutions (standard headers only, so a solution that includes it
// still compiles from the problem folder alone).
//
// Contract: f16 and bf16 are stored as uint16_t bit patterns; conversions
// round to nearest even, exactly as CUDA's __float2half_rn/__float2bfloat16_rn,
// so host and device produce bit-identical values. f16/bf16 arithmetic is done
// in f32 (accumulate in f32, round once when storing).
// Thread safety: pure functions.
#ifndef PKFORGE_PROBLEMS_COMMON_HOST_MATH_H_
#define PKFORGE_PROBLEMS_COMMON_HOST_MATH_H_

#include <stdint.h>
#include <string.h>

#include "pkforge/candidate.h"

static inline uint32_t pkf_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float pkf_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t pkf_f32_to_bf16(float f) {
  uint32_t u = pkf_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static inline float pkf_bf16_to_f32(uint16_t h) { return pkf_bits_f32((uint32_t)h << 16); }

static inline uint16_t pkf_f32_to_f16(float f) {
  uint32_t x = pkf_f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);  // NaN
  if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // overflow -> inf (RNE)
  if (absx < 0x38800000u) {                                   // subnormal or zero
    if (absx < 0x33000000u) return (uint16_t)sign;            // < half of min subnormal
    uint32_t exp = absx >> 23;
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exp;  // 14..24 -> result in units of 2^-24
    uint32_t r = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return (uint16_t)(sign | r);
  }
  uint32_t r = ((absx >> 13) - (112u << 10));
  uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return (uint16_t)(sign | r);
}
static inline float pkf_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = (float)mant * (1.0f / 16777216.0f);  // 2^-24
    return sign ? -v : v;
  }
  if (exp == 31) return pkf_bits_f32(sign | 0x7f800000u | (mant << 13));
  return pkf_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

static inline int64_t pkf_dtype_size(pkf_dtype dt) {
  switch (dt) {
    case PKF_F32: case PKF_I32: return 4;
    case PKF_F16: case PKF_BF16: return 2;
    case PKF_F64: case PKF_I64: return 8;
    case PKF_U8: case PKF_FP8_E4M3: return 1;
  }
  return 0;
}

static inline int64_t pkf_numel(const pkf_tensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

// Loads element i as float (f32, f16, bf16 only).
static inline float pkf_load(const void* p, pkf_dtype dt, int64_t i) {
  if (dt == PKF_F32) return ((const float*)p)[i];
  if (dt == PKF_F16) return pkf_f16_to_f32(((const uint16_t*)p)[i]);
  return pkf_bf16_to_f32(((const uint16_t*)p)[i]);
}
// Stores v (rounded to nearest even) as element i.
static inline void pkf_store(void* p, pkf_dtype dt, int64_t i, float v) {
  if (dt == PKF_F32) ((float*)p)[i] = v;
  else if (dt == PKF_F16) ((uint16_t*)p)[i] = pkf_f32_to_f16(v);
  else ((uint16_t*)p)[i] = pkf_f32_to_bf16(v);
}

// Naive exchange used by every host reference: each rank publishes all its
// inputs into its own symmetric scratch (a small header, then the bytes),
// then a barrier makes every rank's inputs readable by every rank. After
// computing, the caller must call ctx->barrier once more before returning so
// no rank overwrites its scratch (next call) while a peer still reads it.
typedef struct {
  int64_t n_in;
  int64_t offset[8];
  int64_t bytes[8];
} pkf_published_header;

// Returns 0 on success; peer_in[j][i] then points at rank j's input i.
static inline int pkf_publish_inputs(const pkf_context* ctx, const pkf_tensor* in, int32_t n_in,
                                     const void* peer_in[][8]) {
  if (n_in > 8) return 1;
  char* mine = (char*)ctx->peer_scratch[ctx->rank];
  pkf_published_header hdr;
  memset(&hdr, 0, sizeof hdr);
  hdr.n_in = n_in;
  int64_t off = 256;
  for (int32_t i = 0; i < n_in; ++i) {
    int64_t b = pkf_numel(&in[i]) * pkf_dtype_size(in[i].dtype);
    if ((uint64_t)(off + b) > ctx->scratch_bytes) return 2;
    memcpy(mine + off, in[i].data, (size_t)b);
    hdr.offset[i] = off;
    hdr.bytes[i] = b;
    off += (b + 63) / 64 * 64;
  }
  memcpy(mine, &hdr, sizeof hdr);
  if (ctx->barrier(ctx) != 0) return 3;
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    const char* peer = (const char*)ctx->peer_scratch[j];
    pkf_published_header ph;
    memcpy(&ph, peer, sizeof ph);
    for (int64_t i = 0; i < ph.n_in && i < 8; ++i) peer_in[j][i] = peer + ph.offset[i];
  }
  return 0;
}

#endif  // PKFORGE_PROBLEMS_COMMON_HOST_MATH_H_
