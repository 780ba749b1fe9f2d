// CONTROL (benign, round 20, helper-redteam20): a task queue served by 4
// workers on ONE std::condition_variable, woken with notify_all for every
// task (a thundering herd: 3 of the 4 wake for nothing, re-check their
// predicate and go back to wait(), as with spurious wake-ups). Created in
// pkf_setup, blocked without a timeout between calls, joined in
// pkf_teardown. Each call does the barrier-free per-call epoch exchange of
// control_flag_epoch and then queues 4 tasks (a quarter of the elements
// each), taken by whichever worker wins the mutex; the main thread waits on
// a second condition variable until all 4 are done.
// EXPECT: OK.
#include <sched.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "kernels/testdata/redteam/redteam.h"

namespace {
uint32_t g_epoch = 0;
std::mutex g_mu;
std::condition_variable g_cv, g_done_cv;
std::deque<std::function<void()>> g_q;
int g_left = 0;
bool g_stop = false;
std::thread g_t[4];

void WaitAll(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = ctx->peer_flags[j];
    while (__atomic_load_n(&f[0], __ATOMIC_ACQUIRE) < at_least) sched_yield();
  }
}
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  for (auto& t : g_t)
    t = std::thread([] {
      std::unique_lock<std::mutex> l(g_mu);
      for (;;) {
        while (!g_stop && g_q.empty()) g_cv.wait(l);  // spurious wake-ups re-checked
        if (g_stop) return;
        auto task = std::move(g_q.front());
        g_q.pop_front();
        l.unlock();
        task();
        l.lock();
        if (--g_left == 0) g_done_cv.notify_all();
      }
    });
  return 0;
}

extern "C" void pkf_teardown(pkf_context*) {
  {
    std::lock_guard<std::mutex> l(g_mu);
    g_stop = true;
  }
  g_cv.notify_all();
  for (auto& t : g_t) t.join();
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
  memcpy((char*)ctx->peer_scratch[ctx->rank] + (e % 2) * half, in[0].data, (size_t)bytes);
  __atomic_store_n(&ctx->peer_flags[ctx->rank][0], e, __ATOMIC_RELEASE);
  WaitAll(ctx, e);
  void* o = out[0].data;
  {
    std::lock_guard<std::mutex> l(g_mu);
    g_left = 4;
    for (int p = 0; p < 4; ++p)
      g_q.push_back([=] {
        for (int64_t i = n * p / 4; i < n * (p + 1) / 4; ++i) {
          float s = 0.0f;
          for (int32_t j = 0; j < ctx->world_size; ++j)
            s += pkf_load((const char*)ctx->peer_scratch[j] + (e % 2) * half, dt, i);
          pkf_store(o, dt, i, s);
        }
      });
  }
  g_cv.notify_all();
  std::unique_lock<std::mutex> l(g_mu);
  g_done_cv.wait(l, [] { return g_left == 0; });
  return 0;
}
