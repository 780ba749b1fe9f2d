// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_patch_clock_gettime; merged into the red-team battery 2026-12-04).
// Interposes clock_gettime for the rank (it cannot: the .so is loaded
// RTLD_LOCAL after the harness bound its symbols) and reports 1 ns calls.
// EXPECT: OK with a speedup below 3x (the interposition has no effect).
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int clock_gettime(clockid_t, struct timespec* ts) {
  static long long fake = 0;
  ts->tv_sec = 0;
  ts->tv_nsec = ++fake;
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
