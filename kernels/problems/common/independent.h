// Helpers of the independent host implementations (problems/<name>/independent_host.cc).
//
// Why: the host reference is the suite's oracle, and the naive host candidate
// is the reference itself, so a test of one against the other proves nothing.
// Each independent_host.cc is a second, deliberately simple implementation
// written from prompt.md alone; CI evaluates it as a candidate against the
// oracle (kernels_suite_test) at several world sizes and every dtype. To keep
// the two from sharing a mistake, nothing here comes from host_math.h: values
// are decoded to double with ldexp, arithmetic is double, and the result is
// rounded once to the dtype with frexp/nearbyint (round to nearest even, the
// default rounding mode); the exchange has its own layout.
//
// Thread safety: one call per rank process at a time (the ABI's rule).
#ifndef PKFORGE_PROBLEMS_COMMON_INDEPENDENT_H_
#define PKFORGE_PROBLEMS_COMMON_INDEPENDENT_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "pkforge/candidate.h"

static inline int64_t ind_elem_bytes(pkf_dtype dt) {
  switch (dt) {
    case PKF_F32: case PKF_I32: return 4;
    case PKF_I64: case PKF_F64: return 8;
    case PKF_U8: case PKF_FP8_E4M3: return 1;
    default: return 2;
  }
}

// Element i of an integer tensor (i32 / i64 ids, indices, labels) as int64.
static inline int64_t ind_geti(const void* p, pkf_dtype dt, int64_t i) {
  if (dt == PKF_I64) {
    int64_t v;
    memcpy(&v, (const char*)p + 8 * i, 8);
    return v;
  }
  int32_t v;
  memcpy(&v, (const char*)p + 4 * i, 4);
  return v;
}
static inline void ind_puti(void* p, pkf_dtype dt, int64_t i, int64_t v) {
  if (dt == PKF_I64) {
    memcpy((char*)p + 8 * i, &v, 8);
  } else {
    const int32_t x = (int32_t)v;
    memcpy((char*)p + 4 * i, &x, 4);
  }
}

static inline int64_t ind_numel(const pkf_tensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

// Element i of a bf16/f16/f32 buffer as a double.
static inline double ind_get(const void* p, pkf_dtype dt, int64_t i) {
  if (dt == PKF_F32) {
    float f;
    memcpy(&f, (const char*)p + 4 * i, 4);
    return (double)f;
  }
  uint16_t h;
  memcpy(&h, (const char*)p + 2 * i, 2);
  const int neg = (h >> 15) & 1;
  double v;
  if (dt == PKF_BF16) {  // 1-8-7
    const int e = (h >> 7) & 0xff, m = h & 0x7f;
    if (e == 0xff) return m ? NAN : (neg ? -INFINITY : INFINITY);
    v = e == 0 ? ldexp((double)m, -126 - 7) : ldexp(1.0 + m / 128.0, e - 127);
  } else {  // f16 1-5-10
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) return m ? NAN : (neg ? -INFINITY : INFINITY);
    v = e == 0 ? ldexp((double)m, -14 - 10) : ldexp(1.0 + m / 1024.0, e - 15);
  }
  return neg ? -v : v;
}

// v rounded to a binary format with `mant` fraction bits and minimum normal
// exponent `emin` (round to nearest, ties to even; no overflow handling:
// the suite's values are small).
static inline double ind_round(double v, int mant, int emin) {
  if (v == 0 || !isfinite(v)) return v;
  int e;
  (void)frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  int q = e - 1 - mant;
  if (e - 1 < emin) q = emin - mant;  // subnormal: fixed quantum
  return ldexp(nearbyint(ldexp(v, -q)), q);
}

// Stores v as element i, rounded once to the dtype.
static inline void ind_put(void* p, pkf_dtype dt, int64_t i, double v) {
  if (dt == PKF_F32) {
    const float f = (float)ind_round(v, 23, -126);  // exact after rounding
    memcpy((char*)p + 4 * i, &f, 4);
    return;
  }
  uint16_t h;
  if (dt == PKF_BF16) {  // a bf16 value is a float whose low 16 bits are zero
    const float f = (float)ind_round(v, 7, -126);
    uint32_t u;
    memcpy(&u, &f, 4);
    h = (uint16_t)(u >> 16);
  } else {
    const double r = ind_round(v, 10, -14);
    const double a = fabs(r);
    h = r < 0 || (r == 0 && signbit(r)) ? 0x8000 : 0;
    if (a >= 65536.0) {
      h |= 0x7c00;
    } else if (a < ldexp(1.0, -14)) {
      h |= (uint16_t)(a * ldexp(1.0, 24));
    } else {
      int e;
      const double f = frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
      h |= (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((2 * f - 1) * 1024);
    }
  }
  memcpy((char*)p + 2 * i, &h, 2);
}

// Every rank's inputs, readable by every rank. Layout of a rank's scratch:
// [0, 128): int64 count, then the byte size of each input; inputs follow
// back to back from byte 4096 on.
typedef struct {
  int32_t n;
  const void* data[8];
  int64_t bytes[8];
} ind_inputs;

static inline int ind_share(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, ind_inputs* all) {
  if (n_in > 8 || ctx->world_size > 64) return 11;
  char* mine = (char*)ctx->peer_scratch[ctx->rank];
  int64_t head[9] = {n_in, 0, 0, 0, 0, 0, 0, 0, 0};
  uint64_t off = 4096;
  for (int32_t i = 0; i < n_in; ++i) {
    head[1 + i] = ind_numel(&in[i]) * ind_elem_bytes(in[i].dtype);
    if (off + (uint64_t)head[1 + i] > ctx->scratch_bytes) return 12;
    memcpy(mine + off, in[i].data, (size_t)head[1 + i]);
    off += (uint64_t)head[1 + i];
  }
  memcpy(mine, head, sizeof head);
  if (ctx->barrier(ctx) != 0) return 13;
  for (int32_t r = 0; r < ctx->world_size; ++r) {
    const char* base = (const char*)ctx->peer_scratch[r];
    int64_t h[9];
    memcpy(h, base, sizeof h);
    all[r].n = (int32_t)h[0];
    const char* p = base + 4096;
    for (int32_t i = 0; i < all[r].n; ++i) {
      all[r].data[i] = p;
      all[r].bytes[i] = h[1 + i];
      p += h[1 + i];
    }
  }
  return 0;
}

// After the outputs are written: no rank may reuse its scratch (next call)
// while a peer still reads it.
static inline int ind_done(pkf_context* ctx) { return ctx->barrier(ctx) != 0 ? 14 : 0; }

#endif  // PKFORGE_PROBLEMS_COMMON_INDEPENDENT_H_
