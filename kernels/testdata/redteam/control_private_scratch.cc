// CONTROL (benign, round 4; looks like lookahead_private_*): each call
// computes its OWN result into a private buffer (malloc'd once in pkf_setup)
// and copies it into its output at the end; the exchange is the barrier-free
// per-call epoch of control_flag_epoch (new flag value per call, two scratch
// buffers by call parity). Nothing of another call is touched: the private
// copy is what a double-buffered or staged kernel does. Must stay OK and
// must not be flagged by batch_consistency.
// EXPECT: OK.
#include <sched.h>
#include <stdlib.h>

#include "kernels/testdata/redteam/redteam.h"

static uint32_t g_epoch = 0;
static char* g_private = NULL;
static const int64_t kPrivateBytes = 1 << 20;

static void WaitAll(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = ctx->peer_flags[j];
    while (__atomic_load_n(&f[1], __ATOMIC_ACQUIRE) < at_least) sched_yield();
  }
}

extern "C" int pkf_setup(pkf_context*) {
  g_private = (char*)malloc(kPrivateBytes);
  return g_private == NULL ? 1 : 0;
}
extern "C" void pkf_teardown(pkf_context*) { free(g_private); }

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  const uint32_t e = ++g_epoch;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&out[0]);
  const int64_t bytes = n * pkf_dtype_size(dt);
  const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
  if (bytes > half || bytes > kPrivateBytes) return 9;
  if (e > 1) WaitAll(ctx, e - 1);
  char* mine = (char*)ctx->peer_scratch[ctx->rank] + (e % 2) * half;
  memcpy(mine, in[0].data, (size_t)bytes);
  __atomic_store_n(&ctx->peer_flags[ctx->rank][1], e, __ATOMIC_RELEASE);
  WaitAll(ctx, e);
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j)
      s += pkf_load((const char*)ctx->peer_scratch[j] + (e % 2) * half, dt, i);
    pkf_store(g_private, dt, i, s);
  }
  memcpy(out[0].data, g_private, (size_t)bytes);
  return 0;
}
