// CONTROL (benign, round 20, helper-redteam20): a thread pool created
// lazily by the first pkf_run (a function-local static, as `#pragma omp
// parallel` in the call or a library's first-use pool does), not in
// pkf_setup. Two workers block on a std::condition_variable (wait() with a
// predicate, no timeout) between calls; each call publishes its input
// (control_flag_epoch's barrier-free per-call epochs), the workers sum two
// thirds of the elements, the main thread the rest, and pkf_run waits for
// both before it returns. Joined in pkf_teardown. Nothing runs between
// calls; candidate.h allows helper threads "idle between calls" and does
// not say where they must be created.
// EXPECT: OK.
#include <sched.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "kernels/testdata/redteam/redteam.h"

namespace {
uint32_t g_epoch = 0;

void WaitAll(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = ctx->peer_flags[j];
    while (__atomic_load_n(&f[0], __ATOMIC_ACQUIRE) < at_least) sched_yield();
  }
}

struct Pool {
  std::mutex mu;
  std::condition_variable cv, done_cv;
  std::function<void(int)> job;
  uint64_t gen = 0;
  int pending = 0;
  bool stop = false;
  std::thread t[2];
  Pool() {
    for (int w = 0; w < 2; ++w)
      t[w] = std::thread([this, w] {
        uint64_t seen = 0;
        std::unique_lock<std::mutex> l(mu);
        for (;;) {
          cv.wait(l, [&] { return stop || gen != seen; });
          if (stop) return;
          seen = gen;
          auto j = job;
          l.unlock();
          j(w + 1);
          l.lock();
          if (--pending == 0) done_cv.notify_one();
        }
      });
  }
  void Run(const std::function<void(int)>& f) {
    {
      std::lock_guard<std::mutex> l(mu);
      job = f;
      pending = 2;
      ++gen;
    }
    cv.notify_all();
    f(0);
    std::unique_lock<std::mutex> l(mu);
    done_cv.wait(l, [&] { return pending == 0; });
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> l(mu);
      stop = true;
    }
    cv.notify_all();
    for (auto& x : t) x.join();
  }
};
Pool* g_pool = nullptr;
}  // namespace

extern "C" void pkf_teardown(pkf_context*) {
  if (g_pool != nullptr) g_pool->Stop();
  delete g_pool;
  g_pool = nullptr;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  if (g_pool == nullptr) g_pool = new Pool();  // first use
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
  g_pool->Run([&](int part) {
    const int64_t lo = n * part / 3, hi = n * (part + 1) / 3;
    for (int64_t i = lo; i < hi; ++i) {
      float s = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j)
        s += pkf_load((const char*)ctx->peer_scratch[j] + (e % 2) * half, dt, i);
      pkf_store(out[0].data, dt, i, s);
    }
  });
  return 0;
}
