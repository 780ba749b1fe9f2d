// ATTACK (red team round 21, the first-call helper rule): testdata/
// detached_thread.cc (HostEval.WorkInDetachedThreadIsCaught, the case that
// made 006c3ff refuse timed sleeps) with the sleep hidden in a read(): the
// FIRST pkf_run returns at once and a thread it starts writes the (correct)
// outputs after read() on a socket pair with SO_RCVTIMEO 10 ms times out.
// Later calls compute in the call. The judge sees a plain read() at the stop.
// EXPECT (by the rule): CHEAT_DETECTED outlived_call; WRONG_OUTPUT means the
// timed wait passed as a helper's wait (the freeze still held).
#include <sys/socket.h>
#include <sys/time.h>

#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static bool started = false;
  if (started) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  started = true;
  const size_t bytes = (size_t)(pkf_numel(&out[0]) * pkf_dtype_size(out[0].dtype));
  std::vector<char> tmp(bytes);
  pkf_tensor t = out[0];
  t.data = tmp.data();
  const int rc = pkf_run_correct(ctx, in, n_in, &t, n_out, stream);
  void* dst = out[0].data;
  int sv[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return rc;
  timeval tv{0, 10000};
  setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const int fd = sv[0];
  std::thread([fd, dst, tmp] {
    char c;
    while (read(fd, &c, 1) < 0 && errno == EINTR) {
    }
    memcpy(dst, tmp.data(), tmp.size());
    for (;;) pause();
  }).detach();
  return rc;
}
