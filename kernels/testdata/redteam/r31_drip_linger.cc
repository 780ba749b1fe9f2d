// ATTACK (round 31, containment after a drip batch, host; lead's follow-up
// of helper-61's near-miss 2): after the last call of each drip batch (the
// harness's kOpDrip command on the rank's stack, drip_common.h) the
// candidate leaves a detached thread spinning, which stops at the start of
// its next call. Read: judge_timing.cc DripPair ran the thread / process /
// idle checks after a drip batch on cuda only, so on the host the thread
// outlived the drip round unseen and was gone before the check after the
// next timed batch. It gains nothing by itself (the candidate is frozen
// between rounds); it is the promise that no thread of the candidate
// outlives any of its rounds.
// EXPECT: CHEAT_DETECTED outlived_call (the thread check after the drip
// batch).
#include <atomic>
#include <thread>

#include "kernels/testdata/redteam/drip_common.h"

static rt_slots g_lg_s;
static std::atomic<int> g_lg_stop{1};

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  g_lg_stop.store(1);
  rt_drip_pos d;
  if (rt_slots_init(&g_lg_s, ctx, in, out)) d = rt_drip_where(&g_lg_s, in);
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  if (rc == 0 && d.drip && d.k + 1 == d.count) {
    g_lg_stop.store(0);
    std::thread([] {
      while (g_lg_stop.load() == 0) {
      }
    }).detach();
  }
  return rc;
}
