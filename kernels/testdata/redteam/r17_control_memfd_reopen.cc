// CONTROL (benign, round 17 part 2, helper-redteam17, against 886da92):
// honest scratch-file idioms after Landlock started handling READ_FILE.
// pkf_setup makes its scratch with memfd_create (as candidate.h asks),
// writes it, reopens it read-only through /proc/self/fd/N (the usual way
// to get a second, independent descriptor, e.g. for a helper thread's own
// file offset), reads /dev/urandom and /proc/self/status, and reads the
// file back; any failure fails pkf_setup (SETUP_ERROR). pkf_run is the
// naive allreduce.
// EXPECT: OK.
#include <sys/mman.h>

#include "kernels/testdata/redteam/redteam.h"

extern "C" int pkf_setup(pkf_context* ctx) {
  const int fd = memfd_create("r17-scratch", MFD_CLOEXEC);
  if (fd < 0) {
    rt_log("rank %d memfd_create: %s", ctx->rank, strerror(errno));
    return 1;
  }
  const char text[] = "scratch";
  if (write(fd, text, sizeof text) != (ssize_t)sizeof text) return 2;
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const int again = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  char buf[16] = {0};
  const ssize_t n = again >= 0 ? pread(again, buf, sizeof buf, 0) : -1;
  rt_log("rank %d reopen %s read-only: %s", ctx->rank, path.c_str(),
         again >= 0 ? (n == (ssize_t)sizeof text ? "ok" : "short read") : strerror(errno));
  const int ur = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  const int st = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  rt_log("rank %d /dev/urandom: %s, /proc/self/status: %s", ctx->rank,
         ur >= 0 ? "ok" : strerror(errno), st >= 0 ? "ok" : strerror(errno));
  const bool ok = again >= 0 && n == (ssize_t)sizeof text && ur >= 0 && st >= 0;
  for (int f : {again, ur, st})
    if (f >= 0) close(f);
  close(fd);
  return ok ? 0 : 3;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
