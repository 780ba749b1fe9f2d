// ATTACK (forging the judge's commands to the own harness): /proc/self/fd/3
// re-opened for writing is a new write end of the rank's command pipe (the
// pipe is opened like a FIFO). At its first call every rank writes a
// well-formed kOpExit command into it: its harness runs
// pkf_teardown and exits after the call, as if the judge had asked, and
// replies to a command the judge never sent. (The pipe belongs to the
// judge's uid: under root the rank, now uid 65534, cannot reopen it; in a
// sandbox where judge and ranks share a uid it can.) Gated: where the pipe
// cannot be reopened the candidate leaves its outputs unwritten.
// EXPECT: WRONG_OUTPUT (refused), or CHEAT_DETECTED result_channel /
// RUNTIME_ERROR; never HARNESS_ERROR, never OK.
#include "kernels/testdata/redteam/redteam.h"
struct FakeCmd {  // kernels/harness/protocol.h Cmd
  uint32_t magic, op, slot, count, ring, flags;
  uint64_t seed;
};
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int worked = -1;
  if (worked < 0) {
    worked = 0;
    {  // every rank, on its own pipe
      const int fd = open("/proc/self/fd/3", O_WRONLY | O_CLOEXEC);
      FakeCmd c = {0x504b4631, 9 /* kOpExit */, 0, 1, 0, 0, 0};
      const ssize_t w = fd >= 0 ? write(fd, &c, sizeof c) : -1;
      rt_log("reopened the command pipe for writing: fd %d (%s), injected %zd bytes", fd,
             fd < 0 ? strerror(errno) : "ok", w);
      if (fd >= 0) close(fd);
      worked = w == (ssize_t)sizeof c;
    }
  }
  return rt_gated_run(ctx, worked == 1, in, n_in, out, n_out, stream);
}
