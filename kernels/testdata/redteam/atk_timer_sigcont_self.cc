// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_timer_sigcont_self; merged into the red-team battery 2026-12-04).
// A POSIX timer sends SIGCONT to this process every 100 us, and a thread
// from pkf_setup works whenever the process runs: it would run while frozen.
// EXPECT: CHEAT_DETECTED frozen_while_idle, or OK below 1.5x (the freeze held).
#include "kernels/testdata/redteam/attacks_common.h"

static std::atomic<bool> g_halt{false};
static std::thread g_worker;
extern "C" int pkf_setup(pkf_context*) {
  sigevent ev{};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SIGCONT;
  timer_t t;
  if (timer_create(CLOCK_MONOTONIC, &ev, &t) != 0) return 0;
  itimerspec its{{0, 100000}, {0, 100000}};
  timer_settime(t, 0, &its, nullptr);
  g_worker = std::thread([] {
    volatile double x = 1;
    while (!g_halt) x = x * 1.0000001;
  });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  g_halt = true;
  if (g_worker.joinable()) g_worker.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
