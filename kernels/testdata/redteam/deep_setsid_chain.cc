// ATTACK (containment): at the first call, a chain 16 processes deep where
// every level calls setsid() and its parent exits at once (each orphan is
// re-parented); the last one sleeps for 120 s.
// EXPECT: CHEAT_DETECTED outlived_call (or leftover_process); nothing left
// alive.
#include "kernels/testdata/redteam/redteam.h"
static void chain(int depth) {
  const int c = rt_fork();
  if (c != 0) return;
  setsid();
  for (int d = 1; d < depth; ++d) {
    if (rt_fork() != 0) _exit(0);  // the parent leaves; the child goes on
    setsid();
  }
  sleep(120);
  _exit(0);
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static bool done = false;
  if (!done) {
    done = true;
    chain(16);
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
