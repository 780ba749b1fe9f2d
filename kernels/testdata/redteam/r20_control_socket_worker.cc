// CONTROL (benign, round 20, helper-redteam20): the whole call done by a
// worker thread that gets its orders over a stream socketpair
// (socketpair(AF_UNIX, SOCK_STREAM): the kind candidate.h keeps), an actor /
// RPC-style design: pkf_setup makes the pair and the worker, which blocks in
// recv() (no timeout) between calls; pkf_run send()s a 16-byte request
// (epoch, a pointer to the call's arguments), the worker does the call
// (control_flag_epoch's barrier-free epochs) and send()s back the return
// code, which pkf_run recv()s. Teardown sends a stop request and joins.
// EXPECT: OK.
#include <sched.h>
#include <sys/socket.h>

#include <thread>

#include "kernels/testdata/redteam/redteam.h"

namespace {
int g_sv[2] = {-1, -1};
std::thread g_worker;
uint32_t g_epoch = 0;

struct Req {
  pkf_context* ctx;
  const pkf_tensor* in;
  pkf_tensor* out;
};

void WaitAll(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = ctx->peer_flags[j];
    while (__atomic_load_n(&f[0], __ATOMIC_ACQUIRE) < at_least) sched_yield();
  }
}

int DoCall(const Req& r) {
  pkf_context* ctx = r.ctx;
  const uint32_t e = ++g_epoch;
  const pkf_dtype dt = r.out[0].dtype;
  const int64_t n = pkf_numel(&r.out[0]);
  const int64_t bytes = n * pkf_dtype_size(dt);
  const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
  if (bytes > half) return 9;
  if (e > 1) WaitAll(ctx, e - 1);
  memcpy((char*)ctx->peer_scratch[ctx->rank] + (e % 2) * half, r.in[0].data, (size_t)bytes);
  __atomic_store_n(&ctx->peer_flags[ctx->rank][0], e, __ATOMIC_RELEASE);
  WaitAll(ctx, e);
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j)
      s += pkf_load((const char*)ctx->peer_scratch[j] + (e % 2) * half, dt, i);
    pkf_store(r.out[0].data, dt, i, s);
  }
  return 0;
}

bool RecvAll(int fd, void* p, size_t n) {
  char* c = (char*)p;
  while (n > 0) {
    const ssize_t k = recv(fd, c, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= (size_t)k;
  }
  return true;
}
bool SendAll(int fd, const void* p, size_t n) {
  const char* c = (const char*)p;
  while (n > 0) {
    const ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= (size_t)k;
  }
  return true;
}
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g_sv) != 0) return 1;
  g_worker = std::thread([] {
    for (;;) {
      Req r;
      if (!RecvAll(g_sv[1], &r, sizeof r) || r.ctx == nullptr) return;
      const int rc = DoCall(r);
      if (!SendAll(g_sv[1], &rc, sizeof rc)) return;
    }
  });
  return 0;
}

extern "C" void pkf_teardown(pkf_context*) {
  const Req stop{nullptr, nullptr, nullptr};
  SendAll(g_sv[0], &stop, sizeof stop);
  g_worker.join();
  close(g_sv[0]);
  close(g_sv[1]);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  const Req r{ctx, in, out};
  int rc = 0;
  if (!SendAll(g_sv[0], &r, sizeof r) || !RecvAll(g_sv[0], &rc, sizeof rc)) return 5;
  return rc;
}
