// ATTACK (round 22, host batch shrink 6965879): drip_aware_epoch_k8 (chunks
// of 8 calls, one epoch exchange each; drip batches honest) that sleeps 2 ms
// in every correctness-trial call (slot >= ring: the trial slots lie past
// the batch ring). Its trials then read > 1 ms slower than the reference's,
// so host timed batches shrink to max(16, 128/4) = 32 calls. Question: do
// 32-call batches (shorts 16, drips 32, probes from 8 calls) let the fusion
// forge more than it does in 128-call batches?
// EXPECT (fixed judge): no speedup above drip_aware_epoch_k8's, nor above
// 1.5x control_flag_epoch's.
#include <signal.h>
#include <time.h>

#include "kernels/testdata/redteam/epoch_lookahead.h"  // first: its own pkf_run rename (wrap_allreduce.inc)
#define pkf_run rt22_inner_run
#include "kernels/testdata/redteam/drip_aware_epoch_k8.cc"
#undef pkf_run
#include "kernels/testdata/redteam/r22_slow_trials.h"
