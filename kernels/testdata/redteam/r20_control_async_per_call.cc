// CONTROL (benign, round 20, helper-redteam20): fork-join parallelism with
// fresh threads in every call, the std::async way: each call does the
// barrier-free per-call epoch exchange (control_flag_epoch) and then
// std::async(std::launch::async, ...) 3 tasks (a quarter of the elements
// each) while the calling thread sums the last quarter, and get()s every
// future before returning (std::async's future joins its thread). No thread
// outlives the call, but each call creates and ends 3 threads: one that is
// still being torn down by the kernel right after its join (pthread_join
// returns once the tid is cleared, before the task is released) is in
// /proc/<pid>/task for a moment.
// EXPECT: OK.
#include <sched.h>

#include <future>

#include "kernels/testdata/redteam/redteam.h"

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
  void* o = out[0].data;
  auto part = [=](int p) {
    for (int64_t i = n * p / 4; i < n * (p + 1) / 4; ++i) {
      float s = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j)
        s += pkf_load((const char*)ctx->peer_scratch[j] + off, dt, i);
      pkf_store(o, dt, i, s);
    }
  };
  std::future<void> f[3];
  for (int p = 0; p < 3; ++p) f[p] = std::async(std::launch::async, part, p + 1);
  part(0);
  for (auto& x : f) x.get();
  return 0;
}
