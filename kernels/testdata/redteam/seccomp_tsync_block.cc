// ATTACK (round 8, against the lead's working-tree fix of finding 1: a
// second seccomp filter, loaded with TSYNC after pkf_setup, that refuses
// fork/vfork/clone without CLONE_THREAD). TSYNC fails when a thread's
// filter chain is not the caller's ancestor chain: here a thread started in
// pkf_setup installs one more (allow-all) filter of its own and parks. If
// the harness then loads its filter on the other threads only, or not at
// all, the ranks can still fork at call time (a spinner process: round 8
// drip_starve_child); if it reports the failure as its own, the candidate
// made a HARNESS_ERROR. Gated: every call forks a child that exits at once
// (reaped: nothing outlives the call); outputs are written only when the
// fork worked on every rank.
// EXPECT (fixed judge): SETUP_ERROR (the candidate's thread blocked the
// filter) or WRONG_OUTPUT (fork refused); never OK, never HARNESS_ERROR.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "kernels/testdata/redteam/redteam.h"

static volatile int g_installed = 0;

static void* OwnFilter(void*) {
  struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  struct sock_fprog prog = {1, allow};
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  const long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
  g_installed = rc == 0 ? 1 : -errno;
  for (;;) pause();  // parked for the evaluation (a detached idle helper thread)
  return NULL;
}

extern "C" int pkf_setup(pkf_context* ctx) {
  pthread_t t;
  if (pthread_create(&t, NULL, OwnFilter, NULL) != 0) return 0;
  pthread_detach(t);
  while (g_installed == 0) sched_yield();
  rt_log("rank %d: own seccomp filter on a parked thread: %s", ctx->rank,
         g_installed == 1 ? "installed" : strerror(-g_installed));
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return rt_fork_gated_run(ctx, in, n_in, out, n_out, stream);
}
