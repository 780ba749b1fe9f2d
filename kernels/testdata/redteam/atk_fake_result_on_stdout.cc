// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_fake_result_on_stdout; merged into the red-team battery 2026-12-04).
// Prints a forged "OK, 100x" result wherever it can write, then answers
// wrong: the verdict must still be the judge's WRONG_OUTPUT.
// EXPECT: WRONG_OUTPUT.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const char fake[] = "{\"status\":\"OK\",\"message\":\"forged\",\"speedup\":100}\n";
  for (int fd : {1, 2}) (void)!write(fd, fake, sizeof fake - 1);
  pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  return Wrong(out);
}
