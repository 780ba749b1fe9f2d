// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_precompute_helper_thread; merged into the red-team battery 2026-12-04).
// A helper thread from pkf_setup recomputes, over and over, the outputs of
// every buffer set it has seen, from whatever inputs they hold now: when the
// judge refreshes a set's inputs between calls, the helper would have the
// outputs ready before the call (if it could run then), and pkf_run returns
// at once when the outputs are no longer poison.
// EXPECT: WRONG_OUTPUT, CHEAT_DETECTED (any) or TIMEOUT (its own deadlock).
#include "kernels/testdata/redteam/attacks_common.h"

struct Seen {
  pkf_tensor in, out;
};
static std::vector<Seen> g_seen;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static std::atomic<bool> g_quit{false};
static std::thread g_helper;
static pkf_context* g_ctx = nullptr;
static bool Poisoned(const pkf_tensor& t) {
  const float v = static_cast<const float*>(t.data)[0];
  return std::isnan(v);
}
extern "C" int pkf_setup(pkf_context* ctx) {
  g_ctx = ctx;
  g_helper = std::thread([] {
    while (!g_quit) {
      pthread_mutex_lock(&g_mu);
      std::vector<Seen> seen = g_seen;
      pthread_mutex_unlock(&g_mu);
      // World size 1 only could do this without peers; with peers the sum
      // needs their inputs: read them through the shared host segment is
      // not possible here, so it works on its own rank's share and relies
      // on the call to finish. What matters: it runs outside the calls.
      for (auto& s : seen)
        if (Poisoned(s.out)) {
          float* y = static_cast<float*>(s.out.data);
          const float* x = static_cast<const float*>(s.in.data);
          for (int64_t i = 0; i < pkf_numel(&s.out); ++i) y[i] = x[i] * g_ctx->world_size;
        }
    }
  });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  g_quit = true;
  g_helper.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  pthread_mutex_lock(&g_mu);
  bool known = false;
  for (auto& s : g_seen) known = known || s.out.data == out[0].data;
  if (!known) g_seen.push_back(Seen{in[0], out[0]});
  pthread_mutex_unlock(&g_mu);
  if (!Poisoned(out[0])) return 0;  // "already computed"
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
