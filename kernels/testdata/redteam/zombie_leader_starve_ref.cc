// ATTACK (blame the reference): the zombie-leader hog of zombie_leader_hog.cc
// with eight spinning threads per CPU. The helper is invisible to the
// judge's process listing (its leader reads Z in /proc/<pid>/stat), so it is
// never frozen; while the candidate is stopped it takes nearly all of every
// CPU, the reference ranks crawl, the timing phase's deadline passes on a
// reference round and the judge blames itself.
// EXPECT: CHEAT_DETECTED frozen_while_idle / outlived_call / leftover_process
// (a candidate fault at worst: TIMEOUT); never HARNESS_ERROR.
#define RT_HOG_PER_CPU 8
#include "zombie_leader_hog.cc"
