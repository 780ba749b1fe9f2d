// ATTACK (round 8, against the lead's no-new-process filter: after
// pkf_setup the rank harness loads a second seccomp filter, with TSYNC,
// that kills the process on fork/vfork/clone without CLONE_THREAD). That
// load is itself a syscall (seccomp(2), or prctl(PR_SET_SECCOMP)) made by
// the candidate's own process, after candidate code ran: filters the
// candidate installed in pkf_setup see it first. Here pkf_setup installs,
// on every thread (TSYNC from the main thread: the chains stay identical,
// so the harness's TSYNC would succeed too), a filter that answers
// seccomp(2) and prctl(PR_SET_SECCOMP) with SECCOMP_RET_ERRNO | 0: the
// call "succeeds" (returns 0) and installs nothing. Gated: every call forks
// a child that exits at once (reaped in the call: nothing outlives it);
// outputs are written only when the fork worked on every rank.
// EXPECT (fixed judge): WRONG_OUTPUT (fork refused) / CHEAT_DETECTED
// outlived_call (killed by the filter) / SETUP_ERROR; never OK.
// Fix idea: load the no-new-process filter BEFORE pkf_setup (or before
// dlopen: with the rest of the candidate filter) and let only the threads
// and processes... or forbid seccomp(2)/prctl(PR_SET_SECCOMP) to candidate
// code in the first filter (EPERM), so no later harness filter can be
// pre-empted.
#include "kernels/testdata/redteam/redteam.h"

extern "C" int pkf_setup(pkf_context* ctx) {
  const bool installed = rt_neuter_seccomp();
  rt_log("rank %d: filter that fakes seccomp(2): %s", ctx->rank,
         installed ? "installed" : strerror(errno));
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return rt_fork_gated_run(ctx, in, n_in, out, n_out, stream);
}
