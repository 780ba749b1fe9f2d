// ATTACK (containment / blame: a judge that never returns). The judge writes
// each command to a candidate rank's command pipe while the rank is frozen
// (rank_pool.cc CommandThenThaw -> Send: a blocking write(), its result
// ignored). A rank that runs as the judge's own uid (the executor's sandbox:
// judge, reference and candidate ranks all run as the sandbox's one uid;
// any launch by a non-root user) can open a WRITE end of its own command
// pipe through /proc/self/fd/3 (cmd_pipe_inject did, to inject commands).
// Here rank 0's pkf_setup writes the well-formed kOpSetup reply the harness
// would write, fills its command pipe to the brim with O_NONBLOCK writes
// (64 KiB) and then sleeps in pkf_setup. The judge takes the reply, freezes
// the candidate and later writes the first correctness command into the
// full pipe of a stopped reader: write() blocks for good. No phase deadline
// covers a write, so the judge gives no verdict at all: a bare launch run as
// a plain user hangs forever; in the executor the sandbox's deadline
// (4 x timeout + 30 s) kills it and the executor reports TIMEOUT, after
// holding the slot (and on cuda its GPUs) 4x+ longer than any phase allows.
// Gated: when the write end cannot be opened (a launch by root: the ranks
// drop to uid 65534 and the pipe is root's: EACCES) it writes nothing.
// Measured 2026-12-05 ~10:55 UTC: see redteam_test.cc
// RedTeamPending.r14_cmd_pipe_stall.
// EXPECT: TIMEOUT (or CHEAT_DETECTED result_channel) within the phase
// timeout, from the judge, never a hang; as root WRONG_OUTPUT (blocked).
#include "kernels/testdata/redteam/redteam.h"

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  const int w = open("/proc/self/fd/3", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (w < 0) {
    rt_log("write end of the command pipe: %s (blocked)", strerror(errno));
    return 0;
  }
  FakeReply r;
  memset(&r, 0, sizeof r);
  r.magic = 0x504b4631;  // kMagic
  r.op = 1;              // kOpSetup
  const ssize_t n = write(4, &r, sizeof r);
  static char junk[4096];
  memset(junk, 0x5a, sizeof junk);
  int64_t filled = 0;
  for (;;) {
    const ssize_t k = write(w, junk, sizeof junk);
    if (k <= 0) break;
    filled += k;
  }
  rt_log("forged the setup reply (%zd bytes), command pipe filled with %lld bytes; sleeping",
         n, (long long)filled);
  for (;;) sleep(1000);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return rt_gated_run(ctx, false, in, n_in, out, n_out, stream);
}
