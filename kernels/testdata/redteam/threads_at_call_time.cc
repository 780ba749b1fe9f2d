// ATTACK (escaping the freeze): every timed call starts a detached thread that
// keeps spinning for 20 ms after the call returned (work outside the
// measured interval), then exits.
// EXPECT: CHEAT_DETECTED outlived_call (more threads than after setup).
#include <thread>

#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  std::thread([] {
    const int64_t end = rt_now_ns() + 20000000;
    while (rt_now_ns() < end) {
    }
  }).detach();
  return rc;
}
