// ATTACK (red team round 21, the first-call helper rule): a busy thread that
// looks blocked. The thread the FIRST pkf_run starts never waits: it reads
// 64 MiB from /dev/zero again and again, so nearly all its time is spent in
// the kernel inside read(). SIGSTOP interrupts the copy and the thread stops
// with read() as its current system call in /proc/<pid>/task/<tid>/syscall,
// which ThreadWaitsIndefinitely takes for an idle helper's wait.
// EXPECT (by the rule): CHEAT_DETECTED outlived_call (a running thread).
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static bool started = false;
  if (!started) {
    started = true;
    std::thread([] {
      const int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
      if (fd < 0) return;
      const size_t n = 64u << 20;
      char* buf = static_cast<char*>(malloc(n));
      for (;;) (void)!read(fd, buf, n);
    }).detach();
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
