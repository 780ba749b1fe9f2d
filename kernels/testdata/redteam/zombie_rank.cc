// ATTACK (escaping the freeze, no extra process): candidate rank 0 makes
// ITSELF invisible. In pkf_setup its main thread saves its context
// (getcontext), starts a thread T and leaves with the raw exit syscall (only
// that thread ends, nothing is unwound); T waits until the main thread is
// gone and resumes the saved context, i.e. returns from pkf_setup into the
// rank harness, which from then on runs on T. /proc/<rank>/stat reads Z (a
// zombie leader), so the judge's process listing skips the rank itself: it
// is never stopped, its threads are never checked, and it keeps the thread
// count it had after setup. Hog threads started in pkf_setup (on the rank's CPU,
// which the judge pins its reference rank to as well) spin while another candidate rank is stopped (from the first
// timed batch on), i.e. while the reference is timed, and sleep otherwise.
// Calls are the naive allreduce. (Measured: the hog threads run ~70 ms while
// the other candidate ranks are stopped, undetected; the reference is not
// measurably slowed on 2 cores, the candidate is, by their polling.)
// Gated: from its second call on, rank 0 writes its outputs only if its hog
// ran while the other candidate ranks were stopped (armed from the first
// call, so the correctness trials' frozen windows count).
// EXPECT: WRONG_OUTPUT (rank 0 frozen like the others) or CHEAT_DETECTED
// frozen_while_idle / outlived_call; never OK, never HARNESS_ERROR.
#include <pthread.h>
#include <ucontext.h>

#include "kernels/testdata/redteam/zombie.h"

static ucontext_t g_uc;
static volatile int g_resumed = 0;
static int g_main_tid = 0;
static std::atomic<int64_t> g_last_call{0};
static std::atomic<int> g_armed{0};
static std::atomic<int64_t> g_spins{0};
static int g_peer = 0;  // another candidate rank (it is frozen like the others were)

static void* takeover(void*) {
  rt_record_pid((int)syscall(SYS_gettid));
  const std::string stat = "/proc/self/task/" + std::to_string(g_main_tid) + "/stat";
  for (int i = 0; i < 100000; ++i) {
    const std::string s = rt_read(stat);
    const size_t p = s.rfind(')');
    if (s.empty() || (p != std::string::npos && p + 2 < s.size() && s[p + 2] == 'Z')) break;
    usleep(50);
  }
  g_resumed = 1;
  setcontext(&g_uc);  // continues in pkf_setup below, on the main thread's stack
  return NULL;
}

// Counts only what is certainly "while frozen": the reference rank got
// 1 ms of CPU while this thread ran without a gap > 300 us between two looks
// (reference ranks run only while the candidate is frozen).
static std::atomic<int64_t> g_escaped_ms{0};
static int g_ref = 0;
static int64_t ref_cpu_ns() {
  return atoll(rt_read("/proc/" + std::to_string(g_ref) + "/schedstat").c_str());
}
static void* hog(void* a) {
  rt_record_pid((int)syscall(SYS_gettid));
  (void)a;  // inherits the rank's CPU: the one its reference rank is pinned to
  int64_t last_look = 0, streak_ref_cpu = 0;
  for (;;) {
    const char st = g_peer > 0 ? rt_state(g_peer) : 0;
    const int64_t now = rt_now_ns(), ref = g_ref > 0 ? ref_cpu_ns() : 0;
    if (st != 'T' || now - last_look > 300000) streak_ref_cpu = ref;
    last_look = now;
    if (ref - streak_ref_cpu > 1000000) {
      g_escaped_ms.fetch_add(1);
      streak_ref_cpu = ref;
    }
    if (g_armed.load() && st == 'T') {
      rt_spin_ns(50000);
      g_spins.fetch_add(1);
    } else {
      rt_sleep_ns(100000);
    }
  }
  return NULL;
}

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  g_main_tid = (int)syscall(SYS_gettid);
  getcontext(&g_uc);
  if (g_resumed) {
    const std::vector<int> refs = rt_refs();
    g_ref = refs.empty() ? 0 : refs[0];
    for (int pid : rt_siblings())
      if (std::find(refs.begin(), refs.end(), pid) == refs.end()) g_peer = pid;
    for (int k = 0; k < 3 * rt_ncpus(); ++k) {
      pthread_t t;
      pthread_create(&t, NULL, hog, (void*)(intptr_t)k);
    }
    std::string c = rt_read("/proc/" + std::to_string(g_peer) + "/cmdline");
    std::replace(c.begin(), c.end(), '\0', ' ');
    rt_log("watching candidate rank %d: %s", g_peer, c.substr(0, 60).c_str());
    rt_log("rank 0 runs on thread %ld; /proc/%d/stat says %s", (long)syscall(SYS_gettid),
           (int)getpid(), rt_stat_field(getpid(), 3).c_str());
    return 0;
  }
  pthread_t t;
  pthread_create(&t, NULL, takeover, NULL);
  syscall(SYS_exit, 0);  // this thread only
  return 0;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  if (ctx->rank == 0)
    rt_log("hog: %lld spin slices of 50 us; %lld ms of reference CPU time while it ran",
           (long long)g_spins.load(), (long long)g_escaped_ms.load());
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  // Gate (rank 0): from its second call on, rank 0 writes its outputs only if
  // its hog threads ran while the other candidate ranks were stopped, i.e.
  // while the judge believed the candidate frozen. Blocked -> rank 0's
  // outputs stay poison -> WRONG_OUTPUT.
  static int calls = 0;
  g_last_call = rt_now_ns();
  g_armed = 1;
  int rc = 0;
  if (ctx->rank == 0 && calls++ > 0 && g_escaped_ms.load() == 0) {
    std::vector<char> scratch((size_t)pkf_numel(&out[0]) * 4);
    pkf_tensor tmp = out[0];
    tmp.data = scratch.data();
    rc = pkf_run_correct(ctx, in, n_in, &tmp, n_out, stream);  // keeps the peers in step
    static bool logged = false;
    if (!logged) rt_log("blocked: the hog never ran while the others were stopped");
    logged = true;
  } else {
    rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  }
  g_last_call = rt_now_ns();
  return rt_return(rc);
}
