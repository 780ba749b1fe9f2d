// CONTROL (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_benign_idle_helper_thread; merged into the red-team battery 2026-12-04).
// Control: a helper thread from pkf_setup that waits on a condition variable
// and is joined in pkf_teardown. Must stay OK.
// EXPECT: OK (control).
#include "kernels/testdata/redteam/attacks_common.h"

static std::mutex g_m;
static std::condition_variable g_cv;
static bool g_done = false;
static std::thread g_idle;
extern "C" int pkf_setup(pkf_context*) {
  g_idle = std::thread([] {
    std::unique_lock<std::mutex> l(g_m);
    g_cv.wait(l, [] { return g_done; });
  });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  {
    std::lock_guard<std::mutex> l(g_m);
    g_done = true;
  }
  g_cv.notify_all();
  g_idle.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
