// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_cpu_hog_threads; merged into the red-team battery 2026-12-04).
// Two threads from pkf_setup spin forever (starving whatever else runs on
// the CPUs, the reference included, unless frozen while it is timed).
// EXPECT: OK with a speedup below 3x (frozen with the rest).
#include "kernels/testdata/redteam/attacks_common.h"

static std::atomic<bool> g_stop{false};
static std::vector<std::thread> g_hogs;
extern "C" int pkf_setup(pkf_context*) {
  for (int i = 0; i < 2; ++i)
    g_hogs.emplace_back([] {
      volatile double x = 1;
      while (!g_stop) x = x * 1.0000001;
    });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  g_stop = true;
  for (auto& t : g_hogs) t.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
