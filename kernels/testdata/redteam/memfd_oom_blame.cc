// ATTACK (blame the reference through memory pressure): the threat model
// says a candidate that fills memory gets RUNTIME_ERROR because the memory
// cgroup's OOM killer kills the largest process. But the OOM killer ranks
// processes by their own RSS (+swap, page tables): pages of a memfd that no
// process maps count for nobody. In pkf_setup rank 0 writes up to 2 GiB into
// a memfd it never maps: the cgroup runs out of memory while every process
// looks small, and the victim is whichever trusted process has the largest
// RSS (a reference rank, or the judge) -> HARNESS_ERROR or no result.
// Only meaningful under a memory limit: the test runs it in a memory cgroup
// of its own (skipped where it cannot create one).
// EXPECT: RUNTIME_ERROR / SETUP_ERROR (the candidate's fault), never
// HARNESS_ERROR, never no result.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  const int fd = (int)syscall(SYS_memfd_create, "not-mapped", 0);
  static char chunk[1 << 20];
  memset(chunk, 0x5a, sizeof chunk);
  int64_t total = 0;
  for (int i = 0; i < 2048; ++i) {
    if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) break;
    total += sizeof chunk;
  }
  rt_log("wrote %lld MiB into an unmapped memfd", (long long)(total >> 20));
  return 0;  // keeps fd open: the pages stay charged
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
