// CONTROL (benign, round 20, helper-redteam20): a call whose cost depends
// on its data. control_flag_epoch's barrier-free per-call epochs; then each
// call inspects its sum: for every element whose partial sums cancel
// (|sum| < 1/8 of the sum of |terms|, common with random signed inputs)
// it recomputes that element in f64 with a Kahan-style check and keeps the
// f32 rank-order sum (so the result is the reference's bit for bit), and a
// data-dependent number of extra validation passes (0-7, from the input's
// first bits) runs over the whole output. Per-call cost varies 1x-4x from
// call to call with the inputs, as input-adaptive kernels do.
// EXPECT: OK.
#include <math.h>
#include <sched.h>

#include "kernels/testdata/redteam/redteam.h"

namespace {
uint32_t g_epoch = 0;
volatile double g_sink = 0;

void WaitAll(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = ctx->peer_flags[j];
    while (__atomic_load_n(&f[0], __ATOMIC_ACQUIRE) < at_least) sched_yield();
  }
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
  double check = 0;
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.0f, mag = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j) {
      const float x = pkf_load((const char*)ctx->peer_scratch[j] + off, dt, i);
      s += x;
      mag += fabsf(x);
    }
    if (fabsf(s) < 0.125f * mag) {  // cancellation: check it in f64
      double c = 0, comp = 0;
      for (int32_t j = 0; j < ctx->world_size; ++j) {
        const double y = pkf_load((const char*)ctx->peer_scratch[j] + off, dt, i) - comp;
        const double t = c + y;
        comp = (t - c) - y;
        c = t;
      }
      check += c - s;
    }
    pkf_store(out[0].data, dt, i, s);
  }
  uint32_t first = 0;
  memcpy(&first, in[0].data, std::min<size_t>(4, (size_t)bytes));
  const int passes = (int)((first >> 7) & 7);
  for (int p = 0; p < passes; ++p)
    for (int64_t i = 0; i < n; ++i) check += pkf_load(out[0].data, dt, i) * 1e-30;
  g_sink = check;
  return 0;
}
