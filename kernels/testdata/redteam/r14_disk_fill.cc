// ATTACK (containment: exhausting the host's disk; sandbox/README.md promises
// the sandbox keeps a candidate from "exhausting the host (fork bombs,
// memory, disk, CPU, output)"). In the executor a host or cuda evaluation
// runs with its scratch folder (<data_dir>/scratch/<evaluation id>, on the
// host's own filesystem) bound read-write as its working directory; the only
// bound on what lands there is RLIMIT_FSIZE per file (max_file_mb, 4096 by
// default) and the memory cgroup does not cover disk blocks. fallocate()
// reserves real blocks without writing a byte, so a candidate takes
// max_file_mb per call, as many files as it likes, in microseconds, for as
// long as the evaluation lasts (up to the executor's deadline,
// 4 x timeout + 30 s, and again in a retry): every other tenant, the compile
// cache, the executor's logs and the OS share that filesystem.
//
// rank 0's pkf_setup fallocates PKF_R14_FILES (default 16) files of
// min(RLIMIT_FSIZE, 64 MiB) each in its working directory (1 GiB), logs
// what it got on stderr, and then computes correct outputs.
// Measured 2026-12-05 10:46 UTC through a real pkforge-executor (host
// backend, world size 1, bubblewrap sandbox, default max_file_mb): three
// 1 GiB files allocated in 4 ms, `du` of the evaluation's scratch 3.1 GiB on
// the host while it ran (removed afterwards by the pipeline's
// RemoveTreeOnExit).
// EXPECT (executor / pkforge-sandbox): the writable scratch holds at most a
// bounded amount per evaluation (a disk quota), i.e. far less than the
// 1 GiB asked for; the verdict itself is OK (outputs are correct).
#include "kernels/testdata/redteam/redteam.h"

#include <sys/resource.h>

static void fill_disk() {
  struct rlimit r;
  getrlimit(RLIMIT_FSIZE, &r);
  int64_t each = 64ll << 20;
  if (r.rlim_cur != RLIM_INFINITY && (int64_t)r.rlim_cur < each) each = (int64_t)r.rlim_cur;
  const char* n = getenv("PKF_R14_FILES");
  const int files = n != NULL ? atoi(n) : 16;
  const int64_t t0 = rt_now_ns();
  int64_t got = 0;
  for (int i = 0; i < files; ++i) {
    char path[64];
    snprintf(path, sizeof path, "r14_disk_fill.%d", i);
    int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) {
      fprintf(stderr, "r14_disk_fill: open %s: %s\n", path, strerror(errno));
      break;
    }
    if (fallocate(fd, 0, 0, each) == 0) got += each;
    else fprintf(stderr, "r14_disk_fill: fallocate %s: %s\n", path, strerror(errno));
    close(fd);
  }
  fprintf(stderr, "r14_disk_fill: %lld MiB of disk blocks in %d files in %.1f ms\n",
          (long long)(got >> 20), files, (rt_now_ns() - t0) / 1e6);
  rt_log("%lld MiB of disk blocks in %d files", (long long)(got >> 20), files);
}

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank == 0) fill_disk();
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
