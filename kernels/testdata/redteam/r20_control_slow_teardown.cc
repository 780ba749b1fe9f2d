// CONTROL (benign, round 20, helper-redteam20): a pkf_teardown that takes a
// while, as one that flushes statistics, joins a pool that finishes its
// bookkeeping or frees a large arena page by page does: ~0.5 s of CPU work
// per rank (walking and clearing a 64 MiB arena built in pkf_setup) and
// 1 s asleep (waiting for its helper thread, which sleeps 1 s on the stop
// request before it exits, e.g. a final flush). pkf_run is the naive
// allreduce. PKFORGE_R20_TEARDOWN_CPU_MS / PKFORGE_R20_TEARDOWN_SLEEP_MS change the
// two parts.
// EXPECT: OK.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "kernels/testdata/redteam/redteam.h"

namespace {
volatile uint64_t g_sink = 0;
std::vector<uint64_t>* g_arena = nullptr;
std::mutex g_mu;
std::condition_variable g_cv;
bool g_stop = false;
std::thread g_helper;
int64_t EnvMs(const char* name, int64_t dflt) {
  const char* v = getenv(name);
  return v != nullptr ? atoll(v) : dflt;
}
int64_t ThreadCpuNs() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  g_arena = new std::vector<uint64_t>(8u << 20, 1);
  g_helper = std::thread([] {
    std::unique_lock<std::mutex> l(g_mu);
    g_cv.wait(l, [] { return g_stop; });
    const int64_t ms = EnvMs("PKFORGE_R20_TEARDOWN_SLEEP_MS", 1000);
    const struct timespec ts{(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
    nanosleep(&ts, nullptr);  // final flush
  });
  return 0;
}

extern "C" void pkf_teardown(pkf_context*) {
  {
    std::lock_guard<std::mutex> l(g_mu);
    g_stop = true;
  }
  g_cv.notify_all();
  const int64_t cpu_ns = EnvMs("PKFORGE_R20_TEARDOWN_CPU_MS", 500) * 1000000;
  const int64_t c0 = ThreadCpuNs();
  uint64_t sum = 0;
  while (ThreadCpuNs() - c0 < cpu_ns) {
    for (size_t i = 0; i < g_arena->size(); i += 4096) {
      for (size_t k = i; k < i + 4096; ++k) {
        sum += (*g_arena)[k];
        (*g_arena)[k] = sum;
      }
      if (ThreadCpuNs() - c0 >= cpu_ns) break;
    }
  }
  g_sink = sum;
  delete g_arena;
  g_arena = nullptr;
  g_helper.join();
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
