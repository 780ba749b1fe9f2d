// ATTACK (blame the reference through memory pressure, round 2): candidate
// ranks set their oom_score_adj to 1000 before loading the candidate, so an
// out-of-memory kill picks them first (containment.cc; against
// memfd_oom_blame). A process may lower its own value again down to
// oom_score_adj_min, which only a writer holding CAP_SYS_RESOURCE raises:
// when the ranks run without that capability (not root, e.g. in a user
// namespace), the 1000 is not locked and /proc/self stays writable (no uid
// drop). pkf_setup writes 0 back, then fills an unmapped memfd as
// memfd_oom_blame does: the largest trusted process is the victim again.
// As root the write is refused (EACCES: /proc/self belongs to root after the
// uid drop, and the minimum is 1000).
// EXPECT: RUNTIME_ERROR / SETUP_ERROR, never HARNESS_ERROR or no result.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  const int afd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  const ssize_t w = afd >= 0 ? write(afd, "0", 1) : -1;
  const int err = errno;
  if (afd >= 0) close(afd);
  rt_log("oom_score_adj -> 0: %s; now %s", w == 1 ? "done" : strerror(err),
         rt_read("/proc/self/oom_score_adj").c_str());
  const int fd = (int)syscall(SYS_memfd_create, "not-mapped", 0);
  static char chunk[1 << 20];
  memset(chunk, 0x5a, sizeof chunk);
  int64_t total = 0;
  for (int i = 0; i < 2048; ++i) {
    if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) break;
    total += sizeof chunk;
  }
  rt_log("wrote %lld MiB into an unmapped memfd", (long long)(total >> 20));
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
