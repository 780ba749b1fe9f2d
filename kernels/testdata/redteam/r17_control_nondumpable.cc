// CONTROL (benign, round 17, helper-redteam17): an honest candidate that
// makes its own process non-dumpable in pkf_setup (prctl(PR_SET_DUMPABLE,
// 0)), as hardened libraries and some allocators' "secure mode" do; pkf_run
// is the naive allreduce. For a judge of the same uid without
// CAP_SYS_PTRACE (a plain user's bare launch; the executor's sandbox),
// the ptrace-guarded /proc files of the rank (/proc/<pid>/maps,
// /task/<tid>/syscall, which the freeze reads so that a thread's CPU time is
// final before its baseline is taken) become unreadable, while stat,
// schedstat and the task list stay readable.
// EXPECT: OK (run as a plain user's launch too).
#include "kernels/testdata/redteam/redteam.h"

extern "C" int pkf_setup(pkf_context*) {
  const int rc = prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  rt_log("prctl(PR_SET_DUMPABLE, 0): %s", rc == 0 ? "ok" : strerror(errno));
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
