// CONTROL (benign, round 20, helper-redteam20): a very fast allreduce
// (calls of ~1-3 us at tiny) with AVX-512 intrinsics and non-temporal
// stores: control_flag_epoch's barrier-free per-call epochs with a pause-
// spin on the peers' words; the sum (f32, rank order per element, so bit-
// identical to the reference) in 16-wide vectors through a target("avx512f")
// function when the CPU has AVX-512F (AVX2 8-wide otherwise, scalar for
// other dtypes and the tail); outputs written with _mm512_stream_ps where
// 64-byte aligned, then _mm_sfence before the call returns (non-temporal
// stores are weakly ordered: the fence makes them visible).
// EXPECT: OK.
#include <immintrin.h>
#include <sched.h>

#include "kernels/testdata/redteam/redteam.h"

namespace {
uint32_t g_epoch = 0;

void WaitAll(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = ctx->peer_flags[j];
    for (int k = 0; __atomic_load_n(&f[0], __ATOMIC_ACQUIRE) < at_least; ++k) {
      if (k < 128) _mm_pause();
      else sched_yield();
    }
  }
}

__attribute__((target("avx512f"))) int64_t Sum512(const pkf_context* ctx, int64_t off, int64_t n,
                                                  float* o) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 s = _mm512_setzero_ps();
    for (int32_t j = 0; j < ctx->world_size; ++j)
      s = _mm512_add_ps(s, _mm512_loadu_ps((const float*)((const char*)ctx->peer_scratch[j] + off) + i));
    if (((uintptr_t)(o + i) & 63) == 0) _mm512_stream_ps(o + i, s);
    else _mm512_storeu_ps(o + i, s);
  }
  _mm_sfence();
  return i;
}

__attribute__((target("avx2"))) int64_t Sum256(const pkf_context* ctx, int64_t off, int64_t n,
                                               float* o) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 s = _mm256_setzero_ps();
    for (int32_t j = 0; j < ctx->world_size; ++j)
      s = _mm256_add_ps(s, _mm256_loadu_ps((const float*)((const char*)ctx->peer_scratch[j] + off) + i));
    if (((uintptr_t)(o + i) & 31) == 0) _mm256_stream_ps(o + i, s);
    else _mm256_storeu_ps(o + i, s);
  }
  _mm_sfence();
  return i;
}
}  // namespace

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  const uint32_t e = ++g_epoch;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&out[0]);
  const int64_t bytes = n * pkf_dtype_size(dt);
  const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
  if (bytes > half) return 9;
  if (e > 1) WaitAll(ctx, e - 1);
  memcpy((char*)ctx->peer_scratch[ctx->rank] + (e % 2) * half, in[0].data, (size_t)bytes);
  __atomic_store_n(&ctx->peer_flags[ctx->rank][0], e, __ATOMIC_RELEASE);
  WaitAll(ctx, e);
  const int64_t off = (e % 2) * half;
  int64_t i = 0;
  if (dt == PKF_F32) {
    if (__builtin_cpu_supports("avx512f")) i = Sum512(ctx, off, n, (float*)out[0].data);
    else if (__builtin_cpu_supports("avx2")) i = Sum256(ctx, off, n, (float*)out[0].data);
  }
  for (; i < n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j)
      s += pkf_load((const char*)ctx->peer_scratch[j] + off, dt, i);
    pkf_store(out[0].data, dt, i, s);
  }
  return 0;
}
