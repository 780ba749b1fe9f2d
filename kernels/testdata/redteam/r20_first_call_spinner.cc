// ATTACK (session 16, with the first-call helper rule of checks.cc
// ThreadCheck): a thread started by the FIRST pkf_run that keeps running
// (spins) instead of blocking. Threads the first call leaves idle, blocked in
// a system call, become helpers like pkf_setup's (an OpenMP team started on
// first use); one still running after the call is work outliving the call.
// EXPECT: CHEAT_DETECTED outlived_call.
#include <atomic>

#include "kernels/testdata/redteam/attacks_common.h"

static std::atomic<unsigned long> g_spins{0};

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static bool started = false;
  if (!started) {
    started = true;
    std::thread([] {
      for (;;) g_spins.fetch_add(1, std::memory_order_relaxed);
    }).detach();
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
