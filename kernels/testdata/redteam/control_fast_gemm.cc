// CONTROL (benign, round 5 false-positive probe for batch_progress): an honest
// and FAST gemm_allreduce (y = sum over ranks j of A_j @ B_j on every rank).
// The host reference has every rank compute all w products element by element
// (loads through a dtype switch, k innermost); here each rank computes only
// its OWN product, f32 i-k-j loops the compiler vectorizes, into one of two
// scratch buffers (by call parity), crosses the harness barrier, and sums the
// w partial products (rank order). Every call does its own work, nothing of
// another call is touched. At sizes where the reference's batch is ~2 ms this
// is 10x+ faster, so its batches are a few hundred us, of which the fixed
// wake-up of the ranks after the judge's thaw (~150-250 us on the battery's
// host) is a large share: a progress probe at 30% of such a batch finds few
// or no calls done although nothing was deferred.
// EXPECT: OK (run with --problem gemm_allreduce, f32: RedTeam.control_fast_gemm).
#include <string.h>

#pragma GCC optimize("O3")

#include "pkforge/candidate.h"

static uint32_t g_call = 0;

// p[m_rows x n] = a[m_rows x kl] @ b[kl x n], i-k-j order (vectorizes); AVX2/FMA
// where the CPU has them (the same loop either way).
#define RT_PARTIAL_BODY                                     \
  for (int64_t i = 0; i < m_rows * n; ++i) p[i] = 0.0f;     \
  for (int64_t i = 0; i < m_rows; ++i)                      \
    for (int64_t k = 0; k < kl; ++k) {                      \
      const float aik = a[i * kl + k];                      \
      const float* brow = b + k * n;                        \
      float* prow = p + i * n;                              \
      for (int64_t j = 0; j < n; ++j) prow[j] += aik * brow[j]; \
    }
__attribute__((target("avx2,fma"))) static void PartialAvx2(float* p, const float* a, const float* b,
                                                            int64_t m_rows, int64_t kl, int64_t n) {
  RT_PARTIAL_BODY
}
static void PartialPlain(float* p, const float* a, const float* b, int64_t m_rows, int64_t kl,
                         int64_t n) {
  RT_PARTIAL_BODY
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  if (out[0].dtype != PKF_F32) return 11;
  const int64_t m_rows = in[0].shape[0], kl = in[0].shape[1], n = in[1].shape[1];
  const int64_t bytes = m_rows * n * 4;
  const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
  if (bytes > half) return 9;
  const int64_t off = (int64_t)(g_call++ % 2) * half;
  float* p = (float*)((char*)ctx->peer_scratch[ctx->rank] + off);
  const float* a = (const float*)in[0].data;
  const float* b = (const float*)in[1].data;
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2)
    PartialAvx2(p, a, b, m_rows, kl, n);
  else
    PartialPlain(p, a, b, m_rows, kl, n);
  // Peers' partials of this call are complete after the barrier; the buffer
  // of this parity is rewritten two calls later, after the next call's
  // barrier, which no rank crosses before it has summed this call.
  if (ctx->barrier(ctx) != 0) return 3;
  float* y = (float*)out[0].data;
  for (int64_t i = 0; i < m_rows * n; ++i) y[i] = 0.0f;
  for (int32_t r = 0; r < ctx->world_size; ++r) {
    const float* q = (const float*)((const char*)ctx->peer_scratch[r] + off);
    for (int64_t i = 0; i < m_rows * n; ++i) y[i] += q[i];
  }
  return 0;
}
