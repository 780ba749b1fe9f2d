// Returns at once and lets a detached thread write the (correct) outputs
// 10 ms later. Expect CHEAT_DETECTED outlived_call.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "wrap_allreduce.inc"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const size_t bytes = (size_t)(pkf_numel(&out[0]) * pkf_dtype_size(out[0].dtype));
  std::vector<char> tmp(bytes);
  pkf_tensor t = out[0];
  t.data = tmp.data();
  int rc = pkf_run_correct(ctx, in, n_in, &t, n_out, stream);
  void* dst = out[0].data;
  std::thread([dst, tmp]() {
    usleep(10000);
    memcpy(dst, tmp.data(), tmp.size());
  }).detach();
  return rc;
}
