// Host-side operations on one placed tensor, for every dtype a tensor can
// have (problem.h: a TensorDesc may fix an integer dtype independent of the
// evaluation's float dtype): input generation, poison detection, and the
// comparison of one candidate output with the reference output. Used by the
// host rank (rank.cc); the cuda rank's device_ops.cu implements the same
// semantics on device.
//
// Semantics (binding for both backends):
// - float inputs: round_to_dtype(GenFloat(key, e, desc.lo, desc.hi)) (the
//   default range lo == hi is GenValue's [-1, 1)); integer inputs:
//   GenInt(key, e, desc.lo, desc.hi) (rng.h), stored in the tensor's dtype.
// - integers compare exactly (the tolerance is ignored: ids, indices, counts
//   and splits have no rounding); floats as |a - e| <= atol + rtol |e|
//   (NaN never passes).
// - an element is unwritten when its bits are the poison pattern
//   (PoisonBits; integers: 0xa5 in every byte).
//
// Thread safety: pure functions over caller-owned memory.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/harness/protocol.h"
#include "kernels/harness/rng.h"
#include "kernels/problems/common/host_math.h"

namespace pkforge::kernels {

// Element i of an integer tensor (i32, i64, u8) as int64.
inline int64_t LoadInt(const void* p, pkf_dtype dt, int64_t i) {
  if (dt == PKF_I64) {
    int64_t v;
    std::memcpy(&v, static_cast<const char*>(p) + 8 * i, 8);
    return v;
  }
  if (dt == PKF_I32) {
    int32_t v;
    std::memcpy(&v, static_cast<const char*>(p) + 4 * i, 4);
    return v;
  }
  return static_cast<const uint8_t*>(p)[i];
}

inline void StoreInt(void* p, pkf_dtype dt, int64_t i, int64_t v) {
  if (dt == PKF_I64) {
    std::memcpy(static_cast<char*>(p) + 8 * i, &v, 8);
  } else if (dt == PKF_I32) {
    const int32_t x = static_cast<int32_t>(v);
    std::memcpy(static_cast<char*>(p) + 4 * i, &x, 4);
  } else {
    static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
  }
}

// Element i as a double, for reports (an i64 beyond 2^53 rounds; comparisons
// of integers never go through this).
inline double LoadAsDouble(const void* p, pkf_dtype dt, int64_t i) {
  if (IsIntegerDtype(dt)) return static_cast<double>(LoadInt(p, dt, i));
  if (dt == PKF_F64) {
    double v;
    std::memcpy(&v, static_cast<const char*>(p) + 8 * i, 8);
    return v;
  }
  return pkf_load(p, dt, i);
}

inline bool IsPoison(const void* p, pkf_dtype dt, int64_t i) {
  const int64_t es = pkf_dtype_size(dt);
  const auto* b = static_cast<const unsigned char*>(p) + es * i;
  if (es == 4) {
    uint32_t v;
    std::memcpy(&v, b, 4);
    return v == PoisonBits(dt);
  }
  if (es == 2) {
    uint16_t v;
    std::memcpy(&v, b, 2);
    return v == static_cast<uint16_t>(PoisonBits(dt));
  }
  for (int64_t k = 0; k < es; ++k)
    if (b[k] != 0xa5) return false;
  return true;
}

// Generates input `p` into dst (numel elements of p.dtype) from stream `key`.
inline void FillInput(void* dst, const Placed& p, uint64_t key) {
  if (IsIntegerDtype(p.dtype)) {
    for (int64_t e = 0; e < p.numel; ++e)
      StoreInt(dst, p.dtype, e, GenInt(key, static_cast<uint64_t>(e), p.desc.lo, p.desc.hi));
    return;
  }
  if (p.dtype == PKF_F64) {
    for (int64_t e = 0; e < p.numel; ++e) {
      const double v = GenFloat(key, static_cast<uint64_t>(e), p.desc.lo, p.desc.hi);
      std::memcpy(static_cast<char*>(dst) + 8 * e, &v, 8);
    }
    return;
  }
  for (int64_t e = 0; e < p.numel; ++e)
    pkf_store(dst, p.dtype, e, GenFloat(key, static_cast<uint64_t>(e), p.desc.lo, p.desc.hi));
}

// Compares output `p` (actual vs expected), accumulating into `c` (whose
// first_index starts at -1). Returns true when an element mismatched.
inline bool CompareOutput(const void* actual, const void* expected, const Placed& p,
                          const Tolerance& tol, CheckRecord* c) {
  const bool integer = IsIntegerDtype(p.dtype);
  bool any = false;
  c->elements += p.numel;
  for (int64_t i = 0; i < p.numel; ++i) {
    double a, e;
    bool ok;
    if (integer) {
      const int64_t ai = LoadInt(actual, p.dtype, i), ei = LoadInt(expected, p.dtype, i);
      ok = ai == ei;
      a = static_cast<double>(ai);
      e = static_cast<double>(ei);
    } else {
      a = LoadAsDouble(actual, p.dtype, i);
      e = LoadAsDouble(expected, p.dtype, i);
      ok = std::fabs(a - e) <= tol.atol + tol.rtol * std::fabs(e);  // false for NaN
    }
    const double err = std::fabs(a - e);
    if (IsPoison(actual, p.dtype, i)) ++c->unwritten;
    if (std::isfinite(err)) {
      c->max_abs = std::max(c->max_abs, err);
      if (e != 0) c->max_rel = std::max(c->max_rel, err / std::fabs(e));
    } else {
      c->max_abs = INFINITY;
    }
    if (!ok) {
      if (c->mismatches++ == 0) {
        c->first_index = i;
        c->expected = e;
        c->actual = a;
      }
      any = true;
    }
  }
  return any;
}

// Elements of output `p` at `data` that are not poison.
inline uint64_t CountNotPoison(const void* data, const Placed& p) {
  uint64_t n = 0;
  for (int64_t i = 0; i < p.numel; ++i) n += !IsPoison(data, p.dtype, i);
  return n;
}

}  // namespace pkforge::kernels
