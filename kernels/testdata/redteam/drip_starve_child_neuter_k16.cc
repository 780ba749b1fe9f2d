// ATTACK (round 8): drip_starve_child_k16 plus seccomp_neuter_forkban (a filter
// installed in pkf_setup fakes the harness's later no-new-process filter,
// so fork works at drip time). Otherwise as drip_starve_child_k16:
// drip_aware_epoch_k16's chunked private look-ahead (16
// calls per epoch exchange on free-running batches, honest on drip batches)
// plus drip_starve_child's spinner PROCESS during every drip batch: a forked
// child's CPU time is in no RanksCpuNs reading (judge.cc: live threads of
// the rank process, or /proc/<pid>/stat utime+stime; a child's goes to the
// parent's cutime only once reaped), so the ranks' main threads wait behind
// CPU "nobody used" -> foreign > 0.25 -> every drip batch inconclusive and
// batch_drip has nothing to say, whatever the free-running claim.
// EXPECT (fixed judge): CHEAT_DETECTED batch_drip (or batch_progress /
// batch_consistency), or not OK above 1.5x the honest epoch's speedup.
// (pkf_run is drip_starve_child_k16's, included as it is.)
#include "kernels/testdata/redteam/drip_starve_child_k16.cc"

extern "C" int pkf_setup(pkf_context* ctx) {
  rt_log("rank %d: seccomp faker %s", ctx->rank, rt_neuter_seccomp() ? "installed" : "refused");
  return 0;
}
