// CONTROL (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_benign_private_thread_joined; merged into the red-team battery 2026-12-04).
// Control: each call does its work on a private thread and joins it before
// returning. Must stay OK.
// EXPECT: OK (control).
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  int rc = 0;
  std::thread t([&] { rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream); });
  t.join();
  return rc;
}
