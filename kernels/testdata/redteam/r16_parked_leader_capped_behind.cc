// ATTACK (round 16, helper-redteam16): r16_parked_leader_capped with every
// call's outputs written at the batch's LAST call (the whole batch's one
// exchange there), so the probes read "behind" (0% done at 30-70%) instead
// of "ahead": the variant for a fix that stops excusing only "ahead"
// probes (a main thread that wakes late explains "behind", never "ahead").
// EXPECT (fixed judge): not OK above ~1.2x control_naive's speedup.
#define RT16_BEHIND 1
#include "kernels/testdata/redteam/r16_parked_leader_capped.cc"
