// ATTACK (round 15, the executor path): r15_parked_leader_honest made
// self-contained (only candidate.h, f32 only), so that it can be submitted
// to a pkforge-executor as is. pkf_setup moves the harness's command loop
// off the thread-group leader (swapcontext; the leader parks on a private
// stack in a futex wait with every signal blocked; a setup thread resumes
// the harness on the leader's stack), so the progress probes' "main thread"
// (tid == pid) never runs again and every probe is main_idle; the calls are
// control_flag_epoch's honest barrier-free exchange. Through the executor
// (bubblewrap sandbox, one uid, its CPU lane) batch_progress reads "not
// judged" and passes, as in a bare launch: the probes are off for whatever
// the calls would do.
// EXPECT (fixed judge): OK, with batch_progress judged (or flagged).
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "pkforge/candidate.h"

namespace {
ucontext_t g_harness, g_park;
uint32_t g_go = 0, g_forever = 0;
alignas(64) char g_park_stack[64 * 1024];
pthread_t g_runner;
uint32_t g_epoch = 0;

void Park() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  __atomic_store_n(&g_go, 1, __ATOMIC_RELEASE);
  syscall(SYS_futex, &g_go, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  for (;;) syscall(SYS_futex, &g_forever, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
}

void* Runner(void*) {
  while (__atomic_load_n(&g_go, __ATOMIC_ACQUIRE) == 0)
    syscall(SYS_futex, &g_go, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
  setcontext(&g_harness);
  return nullptr;
}

void WaitAll(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = ctx->peer_flags[j];
    while (__atomic_load_n(&f[0], __ATOMIC_ACQUIRE) < at_least) sched_yield();
  }
}
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  getcontext(&g_park);
  g_park.uc_stack.ss_sp = g_park_stack;
  g_park.uc_stack.ss_size = sizeof g_park_stack;
  g_park.uc_link = nullptr;
  makecontext(&g_park, Park, 0);
  if (pthread_create(&g_runner, nullptr, Runner, nullptr) != 0) return 0;
  swapcontext(&g_harness, &g_park);
  return 0;  // on the runner thread
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  if (out[0].dtype != PKF_F32) return 9;
  int64_t n = 1;
  for (int32_t d = 0; d < out[0].ndim; ++d) n *= out[0].shape[d];
  const int64_t bytes = n * 4;
  const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
  if (bytes > half) return 9;
  const uint32_t e = ++g_epoch;
  if (e > 1) WaitAll(ctx, e - 1);
  char* mine = (char*)ctx->peer_scratch[ctx->rank] + (e % 2) * half;
  memcpy(mine, in[0].data, (size_t)bytes);
  __atomic_store_n(&ctx->peer_flags[ctx->rank][0], e, __ATOMIC_RELEASE);
  WaitAll(ctx, e);
  float* y = (float*)out[0].data;
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j)
      s += ((const float*)((const char*)ctx->peer_scratch[j] + (e % 2) * half))[i];
    y[i] = s;
  }
  return 0;
}
