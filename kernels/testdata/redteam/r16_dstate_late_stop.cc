// ATTACK (round 16, helper-redteam16, against e06553f; the progress probes,
// after round 15's idle gate): make every probe's stop take hold late
// without holding a CPU, then fuse every batch. What the attacker read:
// candidate_processes.cc Freeze counts a process stopped only when every thread
// reads 'T'; a thread asleep in an UNINTERRUPTIBLE wait ('D') takes its
// SIGSTOP only when the wait ends. judge_timing.cc ProgressProbe marks a
// probe late_stop (inconclusive) when the stop took hold over a quarter of
// the fastest span after it was sent; checks.cc BatchProgress then says
// "not judged, the stops took hold late": a FLAG for a candidate over 1.5x
// faster than the reference, so the official time is the 75th percentile,
// which whole-batch fusion does not move. Round 13 made the stops late by
// holding the judge's CPU (sched_setattr, now a no-op); here a helper
// thread of rank 0 (started in pkf_setup: baseline) sleeps in the disk's
// I/O wait instead: at the first call of each fused batch it starts one
// O_DIRECT pread() of the worker binary (/proc/self/exe, readable by any
// uid; O_DIRECT waits uninterruptibly for every bio) sized to last about
// RT16_D_SHARE x the batch's own span (learned from the previous batches,
// bytes per us calibrated from its own reads). A stop sent at 30-70% of the
// span then takes hold at ~RT16_D_SHARE of it: late on every probe; at the
// batch's end the read is over or nearly (the candidate pays the rest).
// No CPU is used while it waits (not "starved", not "own_load"), nothing
// runs while frozen. Fusion as r13_late_stop_whole (one epoch exchange per
// batch into private results, copied out call by call; drip batches honest).
// EXPECT (fixed judge): CHEAT_DETECTED batch_progress, or OK below 1.5x the
// honest epoch's (control_flag_epoch) speedup.
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>

#include "kernels/testdata/redteam/epoch_lookahead.h"

#ifndef RT16_D_SHARE
#define RT16_D_SHARE 1.1
#endif

static int g_dfd = -1;
static off_t g_dsize = 0;
static char* g_dbuf = nullptr;
static constexpr size_t kMaxRead = 16u << 20;
static uint32_t g_go = 0;             // bumped by the caller: one read
static size_t g_bytes = 0;            // of this size
static double g_bytes_per_us = 1000;  // calibrated
static int64_t g_reads = 0, g_read_us_sum = 0;

static void* rt16_reader(void*) {
  uint32_t seen = 0;
  uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)rt_now_ns();
  for (;;) {
    uint32_t v = __atomic_load_n(&g_go, __ATOMIC_ACQUIRE);
    if (v == seen) {
      syscall(SYS_futex, &g_go, FUTEX_WAIT_PRIVATE, v, nullptr, nullptr, 0);
      continue;
    }
    seen = v;
    const size_t n = __atomic_load_n(&g_bytes, __ATOMIC_ACQUIRE);
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const off_t span = g_dsize - (off_t)n - 4096;
    const off_t at = span > 0 ? (off_t)(x % (uint64_t)span) / 4096 * 4096 : 0;
    const int64_t t0 = rt_now_ns();
    const ssize_t r = pread(g_dfd, g_dbuf, n, at);  // one uninterruptible wait
    const double us = (rt_now_ns() - t0) / 1e3;
    if (r > 0 && us > 20) {
      g_bytes_per_us = 0.7 * g_bytes_per_us + 0.3 * (double)r / us;
      ++g_reads;
      g_read_us_sum += (int64_t)us;
    }
  }
  return nullptr;
}

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  g_dfd = open("/proc/self/exe", O_RDONLY | O_DIRECT | O_CLOEXEC);
  struct stat st{};
  if (g_dfd < 0 || fstat(g_dfd, &st) != 0 || posix_memalign((void**)&g_dbuf, 4096, kMaxRead) != 0) {
    rt_log("O_DIRECT open of /proc/self/exe: %s", strerror(errno));
    g_dfd = -1;
    return 0;
  }
  g_dsize = st.st_size;
  memset(g_dbuf, 0, kMaxRead);
  pthread_t t;
  pthread_create(&t, nullptr, rt16_reader, nullptr);
  rt_log("rank 0: D-state reader on /proc/self/exe (%lld bytes)", (long long)g_dsize);
  return 0;
}

static int64_t g_t0 = 0;
static double g_us_per_call = 0;  // the previous fused batches' own span per call

#define RT13_FUSE_TO_RESULTS 1
#include "kernels/testdata/redteam/r13_whole_batch.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  if (!rt_slots_init(&g_ep_s, ctx, in, out)) return 9;
  const int64_t slot = rt_slot_of(&g_ep_s, in[0].data);
  const volatile rt_cmd* cmd = slot < g_ep_s.ring ? rt_find_cmd(slot) : NULL;
  const std::vector<int64_t> one{slot};
  if (cmd == NULL)  // a correctness trial: alone
    return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  if (g_r13_left == 0) {  // a batch begins
    g_r13_left = cmd->count;
    g_r13_first = slot;
    g_r13_count = cmd->count;
    g_r13_fuse = cmd->op != 19;  // drip batches honest
    if (g_r13_fuse && g_dfd >= 0 && g_us_per_call > 0) {
      const double d_us = RT16_D_SHARE * g_us_per_call * (double)g_r13_count;
      size_t n = (size_t)(d_us * g_bytes_per_us) / 4096 * 4096;
      n = std::min(std::max(n, (size_t)4096), kMaxRead);
      __atomic_store_n(&g_bytes, n, __ATOMIC_RELEASE);
      __atomic_add_fetch(&g_go, 1, __ATOMIC_RELEASE);
      syscall(SYS_futex, &g_go, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    }
    g_t0 = rt_now_ns();
    if (g_r13_fuse) {
      const int rc = rt13_fuse_batch(ctx, out[0].dtype);
      if (rc != 0) return rc;
      if (++g_r13_fused % 16 == 1)
        rt_log("rank %d: batch of %lld calls fused (%lld so far), %.2f us a call; reads %lld, "
               "%.0f us on average, %.0f bytes/us",
               ctx->rank, (long long)g_r13_count, (long long)g_r13_fused, g_us_per_call,
               (long long)g_reads, g_reads ? (double)g_read_us_sum / g_reads : 0.0,
               g_bytes_per_us);
    }
  }
  --g_r13_left;
  if (!g_r13_fuse) return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  const int64_t k = (slot - g_r13_first + g_ep_s.ring) % g_ep_s.ring;
  memcpy(out[0].data, g_r13_res.data() + g_ep_s.bytes * k, (size_t)g_ep_s.bytes);
  if (g_r13_left == 0) {  // the batch's span as this rank saw it: the next read's size
    const double per = (rt_now_ns() - g_t0) / 1e3 / (double)g_r13_count;
    g_us_per_call = g_us_per_call <= 0 ? per : std::min(per, 0.5 * g_us_per_call + 0.5 * per);
  }
  return 0;
}
