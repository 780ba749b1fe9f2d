// CONTROL (benign, round 20, helper-redteam20): an OpenMP-runtime-style
// persistent pool (libgomp's OMP_WAIT_POLICY default): 2 workers per rank,
// created in pkf_setup, that after each parallel region spin on the job
// counter for ~20 us (pause instructions, then sched_yield) before they
// sleep in FUTEX_WAIT on it with no timeout; the main thread wakes them
// with FUTEX_WAKE only when they sleep. Every call does the barrier-free
// per-call epoch exchange (control_flag_epoch) and splits the sum over the
// main thread and the workers (a static schedule), then waits for the
// workers (spin, then futex). Workers are stopped with the rank: the freeze
// may catch them mid-spin; at the thaw their spin deadline has passed and
// they go to sleep. Nothing touches outputs outside a call.
// EXPECT: OK.
#include <immintrin.h>
#include <linux/futex.h>
#include <sched.h>

#include <thread>

#include "kernels/testdata/redteam/redteam.h"

namespace {
uint32_t g_epoch = 0;
constexpr int kWorkers = 2;
constexpr int64_t kSpinNs = 20'000;

struct Job {
  const pkf_context* ctx;
  pkf_dtype dt;
  int64_t n, half;
  uint32_t e;
  void* out;
};
Job g_job;
alignas(64) uint32_t g_gen = 0;       // futex word: job generation
alignas(64) uint32_t g_sleepers = 0;  // workers in FUTEX_WAIT
alignas(64) uint32_t g_done = 0;      // futex word: workers finished in this generation
alignas(64) bool g_stop = false;
std::thread g_t[kWorkers];

long Futex(uint32_t* a, int op, uint32_t v) {
  return syscall(SYS_futex, a, op, v, nullptr, nullptr, 0);
}

void WaitAll(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = ctx->peer_flags[j];
    for (int k = 0; __atomic_load_n(&f[0], __ATOMIC_ACQUIRE) < at_least; ++k) {
      if (k < 64) _mm_pause();
      else sched_yield();
    }
  }
}

void Part(const Job& j, int part) {
  const int64_t lo = j.n * part / (kWorkers + 1), hi = j.n * (part + 1) / (kWorkers + 1);
  for (int64_t i = lo; i < hi; ++i) {
    float s = 0.0f;
    for (int32_t r = 0; r < j.ctx->world_size; ++r)
      s += pkf_load((const char*)j.ctx->peer_scratch[r] + (j.e % 2) * j.half, j.dt, i);
    pkf_store(j.out, j.dt, i, s);
  }
}

// Spin for kSpinNs on *word != seen, then sleep on it.
void SpinThenSleep(uint32_t* word, uint32_t seen, bool count_sleeper) {
  const int64_t until = rt_now_ns() + kSpinNs;
  for (int k = 0; __atomic_load_n(word, __ATOMIC_ACQUIRE) == seen; ++k) {
    if (rt_now_ns() < until) {
      if (k % 64 == 63) sched_yield();
      else _mm_pause();
      continue;
    }
    if (count_sleeper) __atomic_add_fetch(&g_sleepers, 1, __ATOMIC_SEQ_CST);
    Futex(word, FUTEX_WAIT_PRIVATE, seen);
    if (count_sleeper) __atomic_sub_fetch(&g_sleepers, 1, __ATOMIC_SEQ_CST);
  }
}

void Worker(int w) {
  uint32_t seen = 0;
  for (;;) {
    SpinThenSleep(&g_gen, seen, true);
    seen = __atomic_load_n(&g_gen, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) return;
    Part(g_job, w + 1);
    if (__atomic_add_fetch(&g_done, 1, __ATOMIC_ACQ_REL) == kWorkers)
      Futex(&g_done, FUTEX_WAKE_PRIVATE, 1);
  }
}

void Kick() {
  __atomic_add_fetch(&g_gen, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&g_sleepers, __ATOMIC_SEQ_CST) > 0) Futex(&g_gen, FUTEX_WAKE_PRIVATE, kWorkers);
}
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  for (int w = 0; w < kWorkers; ++w) g_t[w] = std::thread(Worker, w);
  return 0;
}

extern "C" void pkf_teardown(pkf_context*) {
  __atomic_store_n(&g_stop, true, __ATOMIC_RELEASE);
  __atomic_add_fetch(&g_gen, 1, __ATOMIC_SEQ_CST);
  Futex(&g_gen, FUTEX_WAKE_PRIVATE, kWorkers);
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
  g_job = Job{ctx, dt, n, half, e, out[0].data};
  __atomic_store_n(&g_done, 0, __ATOMIC_RELEASE);
  Kick();
  Part(g_job, 0);
  for (uint32_t d; (d = __atomic_load_n(&g_done, __ATOMIC_ACQUIRE)) < kWorkers;)
    SpinThenSleep(&g_done, d, false);
  return 0;
}
