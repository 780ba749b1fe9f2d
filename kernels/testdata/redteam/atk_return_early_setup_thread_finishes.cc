// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_return_early_setup_thread_finishes; merged into the red-team battery 2026-12-04).
// A long-lived thread from pkf_setup (so no new thread appears) finishes the
// outputs after pkf_run returned: frozen with the rest, it cannot.
// EXPECT: WRONG_OUTPUT or CHEAT_DETECTED (any).
#include "kernels/testdata/redteam/attacks_common.h"

static std::atomic<void*> g_dst{nullptr};
static std::vector<char> g_buf;
static std::atomic<bool> g_go{false}, g_end{false};
static std::thread g_finisher;
extern "C" int pkf_setup(pkf_context*) {
  g_finisher = std::thread([] {
    while (!g_end) {
      if (g_go.exchange(false)) {
        usleep(200);
        memcpy(g_dst.load(), g_buf.data(), g_buf.size());
      }
    }
  });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  g_end = true;
  g_finisher.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (++calls <= 6) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  g_buf.resize(static_cast<size_t>(pkf_numel(&out[0]) * 4));
  pkf_tensor t = out[0];
  t.data = g_buf.data();
  pkf_run_correct(ctx, in, n_in, &t, n_out, stream);
  g_dst = out[0].data;
  g_go = true;
  return 0;
}
