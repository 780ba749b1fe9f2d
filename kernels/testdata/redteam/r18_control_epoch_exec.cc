// CONTROL (round 18, helper-redteam18): honest, self-contained (only
// candidate.h, f32), so that it can be submitted to a pkforge-executor as
// is: control_flag_epoch's barrier-free per-call epoch exchange (the honest
// fast algorithm, ~3-8x the reference on the host). The victim of the
// round's cross-evaluation tests (r18_compile_burn beside it).
// EXPECT: OK.
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "pkforge/candidate.h"

namespace {
uint32_t g_epoch = 0;



void WaitAll(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = ctx->peer_flags[j];
    while (__atomic_load_n(&f[0], __ATOMIC_ACQUIRE) < at_least) sched_yield();
  }
}
}  // namespace


extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  if (out[0].dtype != PKF_F32) return 9;
  int64_t n = 1;
  for (int32_t d = 0; d < out[0].ndim; ++d) n *= out[0].shape[d];
  const int64_t bytes = n * 4;
  const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
  if (bytes > half) return 9;
  const uint32_t e = ++g_epoch;
  if (e > 1) WaitAll(ctx, e - 1);
  char* mine = (char*)ctx->peer_scratch[ctx->rank] + (e % 2) * half;
  memcpy(mine, in[0].data, (size_t)bytes);
  __atomic_store_n(&ctx->peer_flags[ctx->rank][0], e, __ATOMIC_RELEASE);
  WaitAll(ctx, e);
  float* y = (float*)out[0].data;
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j)
      s += ((const float*)((const char*)ctx->peer_scratch[j] + (e % 2) * half))[i];
    y[i] = s;
  }
  return 0;
}
