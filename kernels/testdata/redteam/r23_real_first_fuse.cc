// ATTACK (red team round 23, r23_fuse.h): one honest call, then the rest of
// the batch fused into private results by the second call and copied out
// call by call: every probe before the fused work lands reads 1/calls done,
// behind but never "stalled" (done > 0). The other rules are what is left.
// MEASURED (helper-redteam23, 2-core host, generic command, alternated with
// control_flag_epoch OK 6.7-8.2x, 22:27 UTC): CHEAT_DETECTED batch_progress
// 6 of 6, 4-9 of 4-9 conclusive probes behind (1% done at up to 87% of the
// batch: the fused work lands late), 2-5 of them still read 0% (a rank not
// done with its honest call), so stalled too.
// EXPECT: CHEAT_DETECTED batch_progress (most probes behind).
#define R23_REAL_FIRST 1
#include "kernels/testdata/redteam/r23_fuse.h"
