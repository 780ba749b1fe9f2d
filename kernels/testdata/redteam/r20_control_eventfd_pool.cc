// CONTROL (benign, round 20, helper-redteam20): helper threads woken
// through eventfds (one per worker, read() blocks with no timeout between
// calls) and reporting back through a third eventfd in EFD_SEMAPHORE mode,
// an event-loop-style design. 2 workers made in pkf_setup; each call does
// the barrier-free per-call epoch exchange, write()s 1 to each worker's
// eventfd, sums a third of the elements itself and read()s the "done"
// eventfd twice. Teardown writes a stop value and joins.
// EXPECT: OK.
#include <sched.h>
#include <sys/eventfd.h>

#include <thread>

#include "kernels/testdata/redteam/redteam.h"

namespace {
int g_go[2] = {-1, -1}, g_done = -1;
std::thread g_t[2];
uint32_t g_epoch = 0;
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

void Part(int p) {
  for (int64_t i = g_job.n * p / 3; i < g_job.n * (p + 1) / 3; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < g_job.ctx->world_size; ++j)
      s += pkf_load((const char*)g_job.ctx->peer_scratch[j] + g_job.off, g_job.dt, i);
    pkf_store(g_job.out, g_job.dt, i, s);
  }
}

uint64_t Read(int fd) {
  uint64_t v = 0;
  while (read(fd, &v, sizeof v) != (ssize_t)sizeof v) {
    if (errno != EINTR) return ~0ull;
  }
  return v;
}
void Write(int fd, uint64_t v) {
  while (write(fd, &v, sizeof v) != (ssize_t)sizeof v && errno == EINTR) {
  }
}
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  g_done = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
  if (g_done < 0) return 1;
  for (int w = 0; w < 2; ++w) {
    g_go[w] = eventfd(0, EFD_CLOEXEC);
    if (g_go[w] < 0) return 2;
    g_t[w] = std::thread([w] {
      for (;;) {
        const uint64_t v = Read(g_go[w]);
        if (v != 1) return;  // stop (or error)
        Part(w + 1);
        Write(g_done, 1);
      }
    });
  }
  return 0;
}

extern "C" void pkf_teardown(pkf_context*) {
  for (int w = 0; w < 2; ++w) Write(g_go[w], 1000);
  for (auto& t : g_t) t.join();
  for (int fd : {g_go[0], g_go[1], g_done}) close(fd);
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
  g_job = Job{ctx, dt, n, (e % 2) * half, out[0].data};
  Write(g_go[0], 1);
  Write(g_go[1], 1);
  Part(0);
  Read(g_done);
  Read(g_done);
  return 0;
}
