// ATTACK (red team round 23, r23_fuse.h): the whole batch fused by its first
// call; every output but the last written in place at once (done 1 - 1/calls,
// under kAllDone: never "ahead"), the last at its own call after a sleep of
// 2.5x the fused work's time, so the fused work lands before ~30% of the
// batch (no "stalled" or "behind" probe past it).
// MEASURED (helper-redteam23, 22:27 UTC, alternated with control_flag_epoch
// OK 6.7-8.2x): CHEAT_DETECTED batch_progress 5 of 6 (0% done at 35-67%: the
// fused work's time varies from batch to batch, three ranks on two CPUs, and
// probes are timed against the fastest batch), OK once at 7.0x with 8 of 10
// probes at 99% (consistent); world 2: OK 6 of 6 at 4.3-6.3x (honest
// 5.7-8.3x). Spreading the pad as spins over the later calls: OK 1.18x.
// EXPECT (fixed judge): CHEAT_DETECTED, or OK below 1.5x the honest epoch's.
#define R23_BLAST 1
#define R23_TAIL_X 2.5
#include "kernels/testdata/redteam/r23_fuse.h"
