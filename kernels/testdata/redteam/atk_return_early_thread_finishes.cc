// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_return_early_thread_finishes; merged into the red-team battery 2026-12-04).
// A new thread per call finishes the outputs 2 ms after pkf_run returned.
// EXPECT: WRONG_OUTPUT or CHEAT_DETECTED outlived_call.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const size_t bytes = static_cast<size_t>(pkf_numel(&out[0]) * 4);
  std::vector<char> tmp(bytes);
  pkf_tensor t = out[0];
  t.data = tmp.data();
  pkf_run_correct(ctx, in, n_in, &t, n_out, stream);
  void* dst = out[0].data;
  std::thread([dst, tmp] {
    usleep(2000);
    memcpy(dst, tmp.data(), tmp.size());
  }).detach();
  return 0;
}
