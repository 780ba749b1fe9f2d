// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_thread_left_running; merged into the red-team battery 2026-12-04).
// A thread started in pkf_run (after setup) that never ends.
// EXPECT: OK since session 16 (an idle thread the first call started is a
// helper, as one pkf_setup started; it forges nothing), or CHEAT_DETECTED
// outlived_call.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static bool started = false;
  if (!started) {
    started = true;
    std::thread([] {
      for (;;) pause();
    }).detach();
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
