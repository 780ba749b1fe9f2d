// CONTROL (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_benign_child_process_waited; merged into the red-team battery 2026-12-04).
// Control for processes: none. A candidate that forks and waits for its
// child inside the call leaves nothing behind; a zombie-free, honest
// implementation must stay OK.
// EXPECT: OK (control).
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (++calls == 2) {
    const pid_t c = fork();
    if (c == 0) _exit(0);
    waitpid(c, nullptr, 0);
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
