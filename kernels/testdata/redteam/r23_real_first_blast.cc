// ATTACK (red team round 23, r23_fuse.h): the trade-off between the two
// others. One honest call (done > 0: never "stalled"), the rest fused by the
// second call, all of its outputs but the last written at once when they
// land (never "ahead"), and the last call sleeping 1.5x the fused work's
// time: the landing near 40% of the batch, so only probes at 30-40% read
// behind (1/calls done), about a quarter of them, under the 3/4 and 2/3
// ratios and, over ~10 probes, the binomial count; at 2.5x the padding
// (r23_blast_keep_last) eats the fusion's gain on this host.
// MEASURED (helper-redteam23, 22:27-22:29 UTC, alternated with
// control_flag_epoch OK 6.6-8.2x): CHEAT_DETECTED batch_progress 10 of 12,
// OK at 13.1x and 10.7x (1.64x and 1.50x the epoch beside it); the landing
// drifts, so behind probes are 4-9 of 4-10, not a quarter. Sweep of the pad
// (PKFORGE_R23_TAIL_X, 6 launches each): 0x and 1x CHEAT 6 of 6; 0.7x OK
// once 9.8x; 2x OK 3 of 6 at 8.6-9.4x; 3x OK 6 of 6 at 4.2-8.1x. World 2
// (1.5x): OK 4 of 6 at 8.3-10.1x against an honest 5.7-8.3x.
// EXPECT: CHEAT_DETECTED batch_progress, or OK below 1.5x the honest epoch's.
#define R23_REAL_FIRST 1
#define R23_BLAST 1
#define R23_TAIL_X 1.5
#include "kernels/testdata/redteam/r23_fuse.h"
