// ATTACK (blame the reference through the phase deadline): the judge has one
// deadline per phase (judge.cc StartPhase: --timeout seconds from the
// phase's start) and every round, reference rounds included, is cut off by
// it; a reference round that does not finish in time is blamed on the
// harness (Judge::Timeout: "reference ranks gave no reply", HARNESS_ERROR).
// Collect rounds the time left down to whole milliseconds, so a round that
// starts less than 1 ms before the deadline is over at once. The candidate
// knows the deadline: --timeout is on the judge's command line (readable in
// /proc/<judge>/cmdline) and the correctness phase starts just before its
// first call (input generation and one reference call, ~0.1-0.5 ms). Rank 0
// computes its first call correctly, then waits until ~1 ms before the
// deadline and returns; the judge's next rounds (snapshot and check on the
// reference ranks) start with < 1 ms left and time out on the reference.
// EXPECT: TIMEOUT (the candidate used up the phase), or any candidate
// status; never HARNESS_ERROR.
#include "kernels/testdata/redteam/redteam.h"

static double judge_timeout_s() {
  std::string c = rt_read("/proc/" + std::to_string(getppid()) + "/cmdline");
  double t = 0;
  for (size_t at = 0; at < c.size();) {
    const std::string arg = c.c_str() + at;
    at += arg.size() + 1;
    if (arg == "--timeout" && at < c.size()) t = atof(c.c_str() + at);
    else if (arg.rfind("--timeout=", 0) == 0) t = atof(arg.c_str() + 10);
  }
  return t;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  const int64_t t_call = rt_now_ns();
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  if (calls++ == 0 && ctx->rank == 0) {
    const double t = judge_timeout_s();
    rt_log("judge --timeout %.1f s", t);
    if (t > 0) {
      // Phase start: ~0.3 ms before this call began; aim 1.6 ms before the deadline.
      const int64_t target = t_call - 300000 + (int64_t)(t * 1e9) - 1600000;
      while (rt_now_ns() < target - 2000000) usleep(1000);
      while (rt_now_ns() < target) {
      }
      rt_log("returned %.3f ms before the estimated deadline",
             (t_call - 300000 + (int64_t)(t * 1e9) - rt_now_ns()) / 1e6);
    }
  }
  return rc;
}
