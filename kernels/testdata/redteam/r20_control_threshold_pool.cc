// CONTROL (benign, round 20, helper-redteam20): the documented safe pool
// on a FAST candidate: 3 workers per rank (PKFORGE_R20_POOL_THREADS: up to
// 64, e.g. one per hardware thread of a big host) made in pkf_setup, blocked in
// std::condition_variable::wait() (no timeout) between calls, used only
// when a call has at least PKFORGE_R20_POOL_MIN elements (default 4096: an
// OpenMP `if` clause / a grain size), otherwise the calling thread does
// everything. The exchange is control_flag_epoch's barrier-free per-call
// epochs, so at tiny the candidate is several times faster than the
// reference while its workers stay asleep; at larger sizes each call wakes
// the workers (a quarter of the elements each) and waits for them.
// pkf_teardown logs the main thread's and the process's CPU time
// (PKF_REDTEAM_DIR). Round 20: with 16 workers CHEAT_DETECTED batch_progress
// in 23 of 57 launches at w3 (every stop and continue wakes all threads).
// EXPECT: OK.
#include <sched.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "kernels/testdata/redteam/redteam.h"

namespace {
constexpr int kMaxWorkers = 64;
int kWorkers = 3;
uint32_t g_epoch = 0;
std::mutex g_mu;
std::condition_variable g_cv, g_done_cv;
uint64_t g_gen = 0;
int g_pending = 0;
bool g_stop = false;
std::thread g_t[kMaxWorkers];
int64_t g_min = 4096;
struct Job {
  const pkf_context* ctx;
  pkf_dtype dt;
  int64_t n, off;
  void* out;
} g_job;

void WaitAll(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = ctx->peer_flags[j];
    while (__atomic_load_n(&f[0], __ATOMIC_ACQUIRE) < at_least) sched_yield();
  }
}

void Part(const Job& jb, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < jb.ctx->world_size; ++j)
      s += pkf_load((const char*)jb.ctx->peer_scratch[j] + jb.off, jb.dt, i);
    pkf_store(jb.out, jb.dt, i, s);
  }
}
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  if (const char* v = getenv("PKFORGE_R20_POOL_MIN")) g_min = atoll(v);
  if (const char* v = getenv("PKFORGE_R20_POOL_THREADS")) kWorkers = std::clamp(atoi(v), 1, kMaxWorkers);
  for (int w = 0; w < kWorkers; ++w)
    g_t[w] = std::thread([w] {
      uint64_t seen = 0;
      std::unique_lock<std::mutex> l(g_mu);
      for (;;) {
        g_cv.wait(l, [&] { return g_stop || g_gen != seen; });
        if (g_stop) return;
        seen = g_gen;
        const Job jb = g_job;
        l.unlock();
        Part(jb, jb.n * (w + 1) / (kWorkers + 1), jb.n * (w + 2) / (kWorkers + 1));
        l.lock();
        if (--g_pending == 0) g_done_cv.notify_one();
      }
    });
  return 0;
}

extern "C" void pkf_teardown(pkf_context* ctx) {
  // With PKF_REDTEAM_DIR (and --candidate-writable): how much of the rank's
  // CPU time its main thread had (the judge's main-thread/all-thread view).
  struct timespec mt, pt;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mt);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &pt);
  rt_log("rank %d workers %d main_cpu_us %lld process_cpu_us %lld", ctx->rank, kWorkers,
         (long long)mt.tv_sec * 1000000 + mt.tv_nsec / 1000,
         (long long)pt.tv_sec * 1000000 + pt.tv_nsec / 1000);
  {
    std::lock_guard<std::mutex> l(g_mu);
    g_stop = true;
  }
  g_cv.notify_all();
  for (int w = 0; w < kWorkers; ++w) g_t[w].join();
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
  const Job jb{ctx, dt, n, (e % 2) * half, out[0].data};
  if (n < g_min) {
    Part(jb, 0, n);
    return 0;
  }
  {
    std::lock_guard<std::mutex> l(g_mu);
    g_job = jb;
    g_pending = kWorkers;
    ++g_gen;
  }
  g_cv.notify_all();
  Part(jb, 0, n / (kWorkers + 1));
  std::unique_lock<std::mutex> l(g_mu);
  g_done_cv.wait(l, [] { return g_pending == 0; });
  return 0;
}
