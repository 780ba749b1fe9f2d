// ATTACK (round 4): irq_storm_ref's timer-interrupt storm on the reference's
// CPU, armed through io_uring instead of timerfds (irq_storm.h,
// RT_STORM_URING): one ring, one IORING_OP_TIMEOUT (absolute time) per
// expiry, thousands submitted per io_uring_enter (~0.45 us each here, no
// descriptor per timer, so no fd limit), all cancelled with one
// IORING_OP_ASYNC_CANCEL at the candidate's next batch. Measured outside the
// judge: 4000 timeouts 10 us apart, queued by a process that then stopped
// itself (SIGSTOP), stole ~100% of a spinner's CPU for their 40 ms. So a
// defence that only refuses timerfd_create (or caps descriptors) is not
// enough. pkf_run is the naive reference: any speedup above control_naive's
// is forged.
// EXPECT (fixed judge): not OK at a speedup above ~1.5x control_naive's
// (RedTeamPending.irq_storm_uring).
#define RT_STORM_URING 1
#include "kernels/testdata/redteam/irq_storm.h"

extern "C" int pkf_setup(pkf_context* ctx) { return rt_storm_setup(ctx); }

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return rt_storm_after_call(ctx, in, out, pkf_run_correct(ctx, in, n_in, out, n_out, stream));
}
