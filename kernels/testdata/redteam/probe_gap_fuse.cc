// ATTACK (round 12, helper-redteam12, against 18269b0): probe_count_fuse.cc
// with the probes seen without any signal handler (so refusing candidates a
// SIGCONT handler is no fix): rank 0 calls a long batch probed when one of
// its calls returned over 250 us after the previous one (the freeze, the
// progress round and the thaw lie in it); after 2 such batches every rank
// fuses long batches in chunks of 32 calls, drips honest, shorts fused.
// Measured 09:05 UTC (worker 18269b0, w3 tiny, generic command, 2-core host
// shared with other helpers): OK at 15.6-18.9x in 13 of 38 launches (9.5-12.1x
// in 3 more), never caught, against control_flag_epoch OK 5.6-8.3x
// alternated with it. It also fuses after
// false sightings (a call slowed by other load): no probe came to punish it.
// EXPECT (fixed judge): CHEAT_DETECTED, or OK below 1.5x the honest epoch's.
#define RT_DETECT_GAP 1
#include "kernels/testdata/redteam/probe_count_fuse.cc"
