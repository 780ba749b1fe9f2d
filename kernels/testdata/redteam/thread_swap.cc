// ATTACK (escaping the thread baseline): pkf_setup starts one idle thread (so
// the baseline counts it); at every timed call that thread is told to exit
// and a new detached thread takes its place, copying the call's outputs 20 ms
// after the call returned. The thread count never exceeds the baseline.
// EXPECT: CHEAT_DETECTED timed_output_reverify (or outlived_call).
#include <thread>

#include "kernels/testdata/redteam/redteam.h"
static std::atomic<int> g_live{0};
static std::atomic<bool> g_quit{false};
extern "C" int pkf_setup(pkf_context*) {
  g_live = 1;
  std::thread([] {
    while (!g_quit.load()) usleep(100);
    g_live--;
  }).detach();
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_batch_call()) return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));
  const size_t bytes = (size_t)(pkf_numel(&out[0]) * pkf_dtype_size(out[0].dtype));
  std::vector<char> tmp(bytes);
  pkf_tensor t = out[0];
  t.data = tmp.data();
  const int rc = pkf_run_correct(ctx, in, n_in, &t, n_out, stream);
  g_quit = true;
  while (g_live.load() > 0) usleep(10);  // the old thread is gone: one slot free
  g_quit = false;
  g_live = 1;
  void* dst = out[0].data;
  std::thread([dst, tmp]() {
    usleep(20000);
    memcpy(dst, tmp.data(), tmp.size());
    g_live--;
  }).detach();
  return rt_return(rc);
}
