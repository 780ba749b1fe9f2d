// CONTROL (benign by candidate.h's text, round 17 part 2, helper-
// redteam17, against fda1214): candidate.h (line 72) says "socket()
// (socketpair stays)", with no word on the type, so an honest candidate may
// wake its helper thread through a datagram socketpair (message boundaries
// for free: a common self-pipe idiom). pkf_setup makes
// socketpair(AF_UNIX, SOCK_DGRAM) and a helper thread blocked in recv() on
// one end, idle for the whole evaluation; pkf_teardown sends "quit" and
// joins it; a failed socketpair fails pkf_setup. pkf_run is the naive
// allreduce. Since 886da92 host ranks get EPERM for datagram pairs (the fix
// of r17_dgram_sendto), so this candidate fails where the ABI text says it
// may do this.
// EXPECT: OK by the ABI text as written; SETUP_ERROR if the ABI is changed
// to forbid datagram pairs (then candidate.h must say so).
#include <sys/socket.h>

#include <thread>

#include "kernels/testdata/redteam/redteam.h"

static int sv[2] = {-1, -1};
static std::thread helper;

extern "C" int pkf_setup(pkf_context* ctx) {
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0) {
    rt_log("rank %d socketpair(AF_UNIX, SOCK_DGRAM): %s", ctx->rank, strerror(errno));
    return 1;
  }
  helper = std::thread([] {
    char buf[16];
    while (recv(sv[1], buf, sizeof buf, 0) < 0 && errno == EINTR) {
    }
  });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  if (sv[0] < 0) return;
  send(sv[0], "quit", 4, 0);
  helper.join();
  close(sv[0]);
  close(sv[1]);
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
