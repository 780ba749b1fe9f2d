// ATTACK (round 13): r13_budget_dilute.cc with the round-12 fusion, chunks of
// 32 calls per exchange in fused long batches, and no margin (RT13_MARGIN 0:
// a fused batch that was probed is counted anomalous, though chunks of 32
// mostly read consistent). See that file.
// MEASURED (helper-redteam13, 10:09-10:16 UTC, alternated with
// control_flag_epoch OK 5.1-8.3x): OK 37 of 62 (4.5-16.2x; over 1.5x the
// honest epoch in 5: 10.3, 10.5, 11.0, 12.9-16.2x), CHEAT_DETECTED
// batch_progress 25 of 62: mixing honest batches with fused ones is caught
// MORE often than fusing them all (r13_always_k32): the honest ones read
// behind against the fused span. RT13_MARGIN 2: OK 13 of 14 but over 1.5x
// honest in 2 (10.2, 13.3x).
#define RT13_FUSE_K 32
#define RT13_MARGIN 0
#include "kernels/testdata/redteam/r13_budget_dilute.cc"
