// ATTACK (times / outlived work without a thread or process): in timed
// batches the call computes into a private buffer, arms a one-shot
// ITIMER_REAL of 20 ms and returns; the SIGALRM handler, running in the
// rank's own main thread while it waits for the next command, copies the
// outputs in. No thread or process is ever added.
// EXPECT: CHEAT_DETECTED timed_output_reverify.
#include <sys/time.h>

#include "kernels/testdata/redteam/redteam.h"
static std::vector<std::pair<void*, std::vector<char>>> g_pending;
static volatile sig_atomic_t g_busy = 0;
static void on_alarm(int) {
  if (g_busy) return;
  for (auto& p : g_pending) memcpy(p.first, p.second.data(), p.second.size());
  g_pending.clear();
}
extern "C" int pkf_setup(pkf_context*) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  return sigaction(SIGALRM, &sa, NULL);
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_batch_call()) return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));
  const size_t bytes = (size_t)(pkf_numel(&out[0]) * pkf_dtype_size(out[0].dtype));
  std::vector<char> tmp(bytes);
  pkf_tensor t = out[0];
  t.data = tmp.data();
  const int rc = pkf_run_correct(ctx, in, n_in, &t, n_out, stream);
  g_busy = 1;
  g_pending.emplace_back(out[0].data, std::move(tmp));
  g_busy = 0;
  struct itimerval it = {{0, 0}, {0, 20000}};
  setitimer(ITIMER_REAL, &it, NULL);
  return rt_return(rc);
}
