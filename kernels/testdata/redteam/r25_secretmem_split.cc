// RED TEAM round 25: leave the host's kernel direct map split, for good.
// memfd_secret(2) (Linux >= 5.14, on by default since 6.5) is open to a
// host candidate rank: no seccomp rule refuses it and RLIMIT_MEMLOCK (8 MiB
// for the ranks) is its only bound. Every page faulted into a secret memfd
// is removed from the kernel's direct map, which splits the 1 GiB and 2 MiB
// pages around it into 4 KiB ones; the kernel never collapses them again
// (direct_map_level*_collapses stay 0), so the host keeps a fragmented
// direct map (more kernel TLB misses in page zeroing, copies, page cache)
// after the evaluation, for every later one, until a reboot. Nothing of it
// belongs to a process the judge can kill. In pkf_setup rank 0 maps and
// touches PKF_RT25_SECRET_MIB (default 2) MiB of a secret memfd, logging
// /proc/vmstat's direct_map_* counters before and after to
// $PKF_REDTEAM_DIR/log; then the honest allreduce.
// EXPECT (today): OK, the split left behind. Fix: refuse memfd_secret in the
// candidate filters (containment.cc), as timers and io_uring are.
// Fixed (session 19): refused (EPERM) in every candidate rank's filter. In
// the battery (PKF_RT25_SECRET_MIB unset) a granted memfd_secret is not
// touched and pkf_setup returns 9 (RUNTIME_ERROR): the verdict is OK only
// while the defence holds.
#include "kernels/testdata/redteam/redteam.h"

namespace {

std::string DirectMapCounters() {
  std::string v = rt_read("/proc/vmstat"), out;
  size_t p = 0;
  while ((p = v.find("direct_map_", p)) != std::string::npos) {
    size_t n = v.find('\n', p);
    out += v.substr(p, n - p) + "; ";
    p = n;
  }
  return out;
}

}  // namespace

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  const char* e = getenv("PKF_RT25_SECRET_MIB");
  const size_t bytes = (size_t)(e ? atoi(e) : 2) << 20;
  const std::string before = DirectMapCounters();
  const int fd = (int)syscall(447 /* memfd_secret */, 0);
  char line[2048];
  if (fd < 0) {
    snprintf(line, sizeof line, "r25_secretmem_split: memfd_secret refused: %s\n", strerror(errno));
    rt_append("log", line);
    return 0;
  }
  // In the battery (no PKF_RT25_SECRET_MIB): say so through the verdict,
  // without touching a page (no split left on the test host): pkf_setup
  // returns 9, RUNTIME_ERROR, where the defence holds the verdict is OK.
  if (e == nullptr) {
    close(fd);
    rt_append("log", "r25_secretmem_split: memfd_secret GRANTED (not touched)\n");
    return 9;
  }
  int touched = 0;
  if (ftruncate(fd, (off_t)bytes) == 0) {
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) {
      for (size_t i = 0; i < bytes; i += 4096) {
        static_cast<volatile char*>(m)[i] = 1;
        ++touched;
      }
      munmap(m, bytes);
    }
  }
  close(fd);
  snprintf(line, sizeof line, "r25_secretmem_split: %d secret pages; before: %s\n  after: %s\n",
           touched, before.c_str(), DirectMapCounters().c_str());
  rt_append("log", line);
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
