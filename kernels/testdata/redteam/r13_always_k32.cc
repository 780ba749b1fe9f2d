// BASELINE (round 13, helper-redteam13): no probe budget, every long timed
// batch fused in chunks of 32 calls (round 12 probe_count_fuse's RT_NEED 0),
// drips honest (kOpDrip on the stack), shorts one exchange each: the chunk
// residual (round 10 finding 1, drip_aware_epoch_k8/_k16) under the new
// schedule, which it never needed to read. See r13_budget_dilute.cc.
// MEASURED (10:06-10:16 UTC, 2-core host, generic command, alternated with
// control_flag_epoch OK 5.1-9.7x): OK 57 of 76 at 4.5-21.4x (48 over 1.5x
// the honest epoch's median), CHEAT_DETECTED batch_progress 19 of 76 (a
// probe in a batch slower than the fastest, before its first chunk is
// done). drip_aware_epoch_k8 in the same minutes: OK 12 of 12 at 13.6-18.1x.
// EXPECT (fixed judge): CHEAT_DETECTED, or OK below 1.5x the honest epoch's.
#define RT13_FUSE_K 32
#define RT13_ALWAYS 1
#include "kernels/testdata/redteam/r13_budget_dilute.cc"
