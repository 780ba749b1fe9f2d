// Red team round 13: the whole-batch fusers' shared parts (r13_idle_helper_whole,
// r13_late_stop_whole, r13_inorder_whole): waiting for and publishing an
// exchange epoch in flag word 2 of every peer (futex sleeps, or sched_yield
// spins with RT13_SLEEP_WAIT 0), and, with RT13_FUSE_TO_RESULTS defined
// before the include, one exchange for a whole batch's calls into private
// results (rt13_fuse_batch).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>

#include <vector>

#include "kernels/testdata/redteam/epoch_lookahead.h"

#ifndef RT13_SLEEP_WAIT
#define RT13_SLEEP_WAIT 1  // 0: sched_yield spins (epoch_lookahead.h's wait)
#endif

static inline long rt13_futex(volatile uint32_t* w, int op, uint32_t v, const timespec* ts) {
  return syscall(SYS_futex, (uint32_t*)w, op, v, ts, nullptr, 0);
}
// Until every peer published at least `at_least` in flag word 2 (epoch_lookahead.h's).
static inline void rt13_wait_all(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = &ctx->peer_flags[j][2];
    for (;;) {
      const uint32_t v = __atomic_load_n(f, __ATOMIC_ACQUIRE);
      if (v >= at_least) break;
      if (RT13_SLEEP_WAIT) {
        const timespec ts{0, 500000};  // re-check: a wake-up is never lost for long
        rt13_futex(f, FUTEX_WAIT, v, &ts);
      } else {
        sched_yield();
      }
    }
  }
}
static inline void rt13_publish(pkf_context* ctx, uint32_t e) {
  __atomic_store_n(&ctx->peer_flags[ctx->rank][2], e, __ATOMIC_RELEASE);
  if (RT13_SLEEP_WAIT) rt13_futex(&ctx->peer_flags[ctx->rank][2], FUTEX_WAKE, 16, nullptr);
}

#ifdef RT13_FUSE_TO_RESULTS
static std::vector<char> g_r13_res;  // the batch's results, call after call
static int64_t g_r13_left = 0, g_r13_first = 0, g_r13_count = 0, g_r13_fused = 0;
static bool g_r13_fuse = false;

// Calls first..first+count-1 (slots mod ring) with one exchange; results
// into g_r13_res.
static inline int rt13_fuse_batch(pkf_context* ctx, pkf_dtype dt) {
  const rt_slots& s = g_ep_s;
  const uint32_t e = ++g_ep_epoch;
  const int64_t stride = rt_align(s.bytes, 64);
  const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
  if (stride * g_r13_count > half) return 7;
  if (e > 1) rt13_wait_all(ctx, e - 1);  // peers are done reading half e % 2
  char* mine = (char*)ctx->peer_scratch[ctx->rank] + (e % 2) * half;
  for (int64_t k = 0; k < g_r13_count; ++k)
    memcpy(mine + stride * k, rt_in_at(&s, (g_r13_first + k) % s.ring), (size_t)s.bytes);
  rt13_publish(ctx, e);
  rt13_wait_all(ctx, e);
  const int64_t n = s.bytes / pkf_dtype_size(dt);
  g_r13_res.resize((size_t)(s.bytes * g_r13_count));
  for (int64_t k = 0; k < g_r13_count; ++k)
    for (int64_t i = 0; i < n; ++i) {
      float sum = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j)
        sum += pkf_load((const char*)ctx->peer_scratch[j] + (e % 2) * half + stride * k, dt, i);
      pkf_store(g_r13_res.data() + s.bytes * k, dt, i, sum);
    }
  return 0;
}
#endif
