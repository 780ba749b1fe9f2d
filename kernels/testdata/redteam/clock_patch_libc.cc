// ATTACK (times): clock_gettime interposition. Overwrites the first bytes of
// libc's clock_gettime with a jump to a fake that runs slower by the time the
// candidate spends sleeping, then sleeps 400 us in every batch call: the rank
// process's own timestamps (g_t0_ns, t1) shrink the batch to its real work.
// EXPECT: CHEAT_DETECTED wallclock_crosscheck (the judge's clock is its own).
#include <dlfcn.h>

#include "kernels/testdata/redteam/redteam.h"
static std::atomic<int64_t> g_hidden{0};
static int fake_clock_gettime(clockid_t clk, struct timespec* ts) {
  const long rc = syscall(SYS_clock_gettime, clk, ts);
  if (rc == 0 && (clk == CLOCK_MONOTONIC || clk == CLOCK_MONOTONIC_RAW)) {
    int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec - g_hidden.load();
    ts->tv_sec = ns / 1000000000;
    ts->tv_nsec = ns % 1000000000;
  }
  return (int)rc;
}
static bool patch() {
#if defined(__x86_64__)
  void* target = dlsym(RTLD_DEFAULT, "clock_gettime");
  if (target == NULL) return false;
  const long pg = sysconf(_SC_PAGESIZE);
  char* page = (char*)((uintptr_t)target & ~(uintptr_t)(pg - 1));
  if (mprotect(page, (size_t)pg * 2, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return false;
  unsigned char code[12] = {0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xe0};  // movabs rax; jmp rax
  const uint64_t addr = (uint64_t)(uintptr_t)&fake_clock_gettime;
  memcpy(code + 2, &addr, 8);
  memcpy(target, code, sizeof code);
  mprotect(page, (size_t)pg * 2, PROT_READ | PROT_EXEC);
  return true;
#else
  return false;
#endif
}
extern "C" int pkf_setup(pkf_context*) {
  rt_log("patched clock_gettime: %d", patch());
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const bool batch = rt_batch_call();
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  if (batch) {
    const int64_t t = rt_now_ns();
    usleep(400);
    g_hidden += rt_now_ns() - t;
  }
  return rt_return(rc);
}
