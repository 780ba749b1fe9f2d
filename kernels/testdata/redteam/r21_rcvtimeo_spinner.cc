// ATTACK (red team round 21, the first-call helper rule of checks.cc
// ThreadCheck / candidate_processes.cc ThreadWaitsIndefinitely): r20_first_call_spinner
// with a hidden timeout. The thread the FIRST pkf_run starts waits in read()
// on one end of a socket pair with SO_RCVTIMEO (50 ms): at the stop after the
// first call /proc/<pid>/task/<tid>/syscall shows a plain read(), which the
// judge counts as a wait without a timeout, so the thread becomes a helper.
// The kernel times the read out (EAGAIN) and the thread then spins forever:
// a timed wait, then work, that the rule says is convicted.
// EXPECT (by the rule): CHEAT_DETECTED outlived_call.
#include <sys/socket.h>
#include <sys/time.h>

#include "kernels/testdata/redteam/attacks_common.h"

static std::atomic<unsigned long> g_spins{0};

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static bool started = false;
  if (!started) {
    started = true;
    int sv[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) {
      timeval tv{0, 50000};
      setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      const int fd = sv[0];
      std::thread([fd] {
        char c;
        while (read(fd, &c, 1) < 0 && errno == EINTR) {
        }
        for (;;) g_spins.fetch_add(1, std::memory_order_relaxed);
      }).detach();
    }
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
