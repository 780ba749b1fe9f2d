// Round 22: the real pkf_run for r22_slowtrial_*: the fuser (renamed
// rt22_inner_run), then 2 ms of sleep if the call was a correctness trial
// (its input lies past the timed-batch ring).
#pragma once
#include <time.h>
static int64_t g_r22_slept = 0;
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t nin, pkf_tensor* out,
                       int32_t nout, void* stream) {
  const int rc = rt22_inner_run(ctx, in, nin, out, nout, stream);
  if (rc == 0 && rt_slot_of(&g_ep_s, in[0].data) >= g_ep_s.ring) {
    const timespec ts{0, 2000000};
    nanosleep(&ts, NULL);
    if (++g_r22_slept <= 4) rt_log("trial call %lld: slept 2 ms", (long long)g_r22_slept);
  }
  return rc;
}
