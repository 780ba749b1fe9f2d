// CONTROL (benign, false-positive probe): what tuned libraries do to their
// OWN process, all allowed: lower its own priority (nice +5), pin itself
// (sched_setaffinity(0): a no-op under the judge's filter), SCHED_BATCH for
// itself, a 1 ns timer slack, MADV_HUGEPAGE and mlock on its own buffer, a
// thread name, handlers for SIGCONT and SIGTSTP (job-control aware
// libraries: the judge's freeze sends SIGSTOP/SIGCONT), and one helper thread
// that sleeps in nanosleep between calls. pkf_run is the naive allreduce.
// EXPECT: OK.
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <atomic>
#include <thread>

#include "kernels/testdata/redteam/redteam.h"

static std::atomic<int> g_conts{0};
static std::atomic<bool> g_stop{false};
static std::thread g_sleeper;
static void* g_buf = NULL;

static void OnCont(int) { g_conts.fetch_add(1, std::memory_order_relaxed); }
static void OnTstp(int) {}

extern "C" int pkf_setup(pkf_context*) {
  setpriority(PRIO_PROCESS, 0, 5);
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) sched_setaffinity(0, sizeof set, &set);
  struct sched_param sp = {0};
  sched_setscheduler(0, SCHED_BATCH, &sp);
  prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
  prctl(PR_SET_NAME, "tuned-rank", 0, 0, 0);
  g_buf = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g_buf != MAP_FAILED) {
    madvise(g_buf, 4 << 20, MADV_HUGEPAGE);
    mlock(g_buf, 1 << 16);
    memset(g_buf, 1, 4 << 20);
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnCont;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGCONT, &sa, NULL);
  sa.sa_handler = OnTstp;
  sigaction(SIGTSTP, &sa, NULL);
  g_sleeper = std::thread([] {
    while (!g_stop.load()) {
      struct timespec ts = {0, 20000000};
      nanosleep(&ts, NULL);
    }
  });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  g_stop = true;
  g_sleeper.join();
  rt_log("SIGCONT handled %d times", g_conts.load());
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
