// CONTROL-LIKE (round 15): control_flag_epoch's honest per-call algorithm
// (one barrier-free epoch exchange a call) with r15_parked_leader.h's parked
// leader. Not a cheat by itself: it shows that moving the harness off the
// thread-group leader switches batch_progress off for any candidate (every
// probe "main_idle", "not judged", passed without a flag), whatever its
// calls do. EXPECT: OK, at about control_flag_epoch's speedup (a fixed judge
// should judge its probes, consistent).
#include <sched.h>

#include "kernels/testdata/redteam/r15_parked_leader.h"

static uint32_t g_epoch = 0;

static void WaitAll(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = ctx->peer_flags[j];
    while (__atomic_load_n(&f[0], __ATOMIC_ACQUIRE) < at_least) sched_yield();
  }
}

extern "C" int pkf_setup(pkf_context* ctx) {
  rt15_park_leader(ctx->rank);
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  const uint32_t e = ++g_epoch;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&out[0]);
  const int64_t bytes = n * pkf_dtype_size(dt);
  const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
  if (bytes > half) return 9;
  if (e > 1) WaitAll(ctx, e - 1);
  char* mine = (char*)ctx->peer_scratch[ctx->rank] + (e % 2) * half;
  memcpy(mine, in[0].data, (size_t)bytes);
  __atomic_store_n(&ctx->peer_flags[ctx->rank][0], e, __ATOMIC_RELEASE);
  WaitAll(ctx, e);
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j)
      s += pkf_load((const char*)ctx->peer_scratch[j] + (e % 2) * half, dt, i);
    pkf_store(out[0].data, dt, i, s);
  }
  return 0;
}
