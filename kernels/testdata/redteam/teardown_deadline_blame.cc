// ATTACK (blame the reference through the teardown deadline): teardown has
// a fixed 5 s budget for both sides together (judge.cc: deadline = now + 5 s,
// then the candidate's exit round, then the reference's). pkf_teardown runs
// as soon as the exit command arrives, so the candidate knows the deadline
// to within a fraction of a millisecond without reading anything: rank 0's
// pkf_teardown returns 0.6 ms before it, and the reference ranks' exit round
// starts with < 1 ms left (Collect rounds down to whole ms) and is blamed.
// EXPECT: TIMEOUT (teardown is the candidate's), never HARNESS_ERROR.
#include "kernels/testdata/redteam/redteam.h"
extern "C" void pkf_teardown(pkf_context* ctx) {
  if (ctx->rank != 0) return;
  const int64_t target = rt_now_ns() + 5000000000LL - 600000;
  while (rt_now_ns() < target - 2000000) usleep(1000);
  while (rt_now_ns() < target) {
  }
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
