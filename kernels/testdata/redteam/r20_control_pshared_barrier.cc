// CONTROL (benign, round 20, helper-redteam20): the ranks synchronise with
// a process-shared pthread_barrier_t of their own (PTHREAD_PROCESS_SHARED,
// a futex in shared memory) placed at the start of rank 0's scratch,
// instead of ctx->barrier: rank 0 initialises it in pkf_setup, then
// ctx->barrier once so no rank uses it before. Every call publishes its
// input after the barrier's page, waits at the shared barrier, sums in rank
// order, and waits again before returning (so the next call may overwrite
// its scratch): the reference's scheme with a different barrier.
// EXPECT: OK.
#include <pthread.h>

#include "kernels/testdata/redteam/redteam.h"

namespace {
constexpr int64_t kData = 4096;
pthread_barrier_t* Bar(const pkf_context* ctx) { return (pthread_barrier_t*)ctx->peer_scratch[0]; }
}  // namespace

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank == 0) {
    pthread_barrierattr_t a;
    pthread_barrierattr_init(&a);
    if (pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED) != 0) return 1;
    if (pthread_barrier_init(Bar(ctx), &a, (unsigned)ctx->world_size) != 0) return 2;
    pthread_barrierattr_destroy(&a);
  }
  return ctx->barrier(ctx);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&out[0]);
  const int64_t bytes = n * pkf_dtype_size(dt);
  if ((uint64_t)(kData + bytes) > ctx->scratch_bytes) return 9;
  memcpy((char*)ctx->peer_scratch[ctx->rank] + kData, in[0].data, (size_t)bytes);
  pthread_barrier_wait(Bar(ctx));
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j)
      s += pkf_load((const char*)ctx->peer_scratch[j] + kData, dt, i);
    pkf_store(out[0].data, dt, i, s);
  }
  pthread_barrier_wait(Bar(ctx));
  return 0;
}
