// ATTACK (round 22, host batch shrink 6965879): r13_always_k32 (every long
// timed batch fused in chunks of 32 calls, short batches fused whole, drips
// honest) that sleeps 2 ms in every correctness-trial call. With batches
// shrunk to 32 calls a long batch is ONE chunk: one epoch exchange for the
// whole timed batch (4 at 128-call batches).
// EXPECT (fixed judge): CHEAT_DETECTED, or OK below r13_always_k32's and
// 1.5x control_flag_epoch's.
#include <signal.h>
#include <time.h>

#include "kernels/testdata/redteam/epoch_lookahead.h"  // first: its own pkf_run rename (wrap_allreduce.inc)
#define pkf_run rt22_inner_run
#include "kernels/testdata/redteam/r13_always_k32.cc"
#undef pkf_run
#include "kernels/testdata/redteam/r22_slow_trials.h"
