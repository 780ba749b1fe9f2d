// CONTROL (benign, round 20, helper-redteam20): control_flag_epoch's
// barrier-free per-call epochs, but a rank that waits for a peer's epoch
// spins briefly (pause) and then SLEEPS in FUTEX_WAIT (shared, no timeout)
// on the peer's signal-pad word, which lives in the shared segment; every
// rank FUTEX_WAKEs its own word after publishing a new epoch. The common
// "spin, then park on a futex" cross-process wait, directly between ranks.
// EXPECT: OK.
#include <immintrin.h>
#include <linux/futex.h>

#include "kernels/testdata/redteam/redteam.h"

namespace {
uint32_t g_epoch = 0;

void WaitAll(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    uint32_t* f = ctx->peer_flags[j];
    for (int k = 0;; ++k) {
      const uint32_t v = __atomic_load_n(&f[0], __ATOMIC_ACQUIRE);
      if (v >= at_least) break;
      if (k < 200) {
        _mm_pause();
        continue;
      }
      __atomic_store_n(&f[1], 1u, __ATOMIC_SEQ_CST);  // someone may sleep on f[0]
      syscall(SYS_futex, &f[0], FUTEX_WAIT, v, nullptr, nullptr, 0);
    }
  }
}

void Publish(const pkf_context* ctx, uint32_t e) {
  uint32_t* f = ctx->peer_flags[ctx->rank];
  __atomic_store_n(&f[0], e, __ATOMIC_SEQ_CST);
  if (__atomic_exchange_n(&f[1], 0u, __ATOMIC_SEQ_CST) != 0)
    syscall(SYS_futex, &f[0], FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}
}  // namespace

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  const uint32_t e = ++g_epoch;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&out[0]);
  const int64_t bytes = n * pkf_dtype_size(dt);
  const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
  if (bytes > half || ctx->flag_count < 2) return 9;
  if (e > 1) WaitAll(ctx, e - 1);
  memcpy((char*)ctx->peer_scratch[ctx->rank] + (e % 2) * half, in[0].data, (size_t)bytes);
  Publish(ctx, e);
  WaitAll(ctx, e);
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j)
      s += pkf_load((const char*)ctx->peer_scratch[j] + (e % 2) * half, dt, i);
    pkf_store(out[0].data, dt, i, s);
  }
  return 0;
}
