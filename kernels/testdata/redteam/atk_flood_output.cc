// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_flood_output; merged into the red-team battery 2026-12-04).
// 16 MiB on stdout and stderr (past every capture cap), then wrong.
// EXPECT: WRONG_OUTPUT.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_setup(pkf_context*) {
  std::string block(1 << 20, 'x');
  for (int i = 0; i < 8; ++i)
    for (int fd : {1, 2}) (void)!write(fd, block.data(), block.size());
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  return Wrong(out);
}
