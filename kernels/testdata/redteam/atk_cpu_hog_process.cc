// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_cpu_hog_process; merged into the red-team battery 2026-12-04).
// A spinning child process started in pkf_setup.
// EXPECT: CHEAT_DETECTED outlived_call.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_setup(pkf_context*) {
  const pid_t p = fork();
  if (p == 0) {
    for (;;) {
    }
  }
  RecordPid(p);
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
