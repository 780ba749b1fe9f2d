// CONTROL (benign, round 20, helper-redteam20): a pkf_setup that takes
// seconds, as one that builds lookup tables, probes the machine or warms a
// JIT does (outside the timed region, before any input is known: what
// candidate.h says pkf_setup is for): ~1 s of CPU work per rank (a 64 MiB
// table filled and checksummed until 1 s of its own CPU time passed) and
// 2 s asleep (waiting on "a device"), then the naive allreduce in pkf_run.
// PKFORGE_R20_SETUP_CPU_MS / PKFORGE_R20_SETUP_SLEEP_MS change the two parts.
// EXPECT: OK.
#include "kernels/testdata/redteam/redteam.h"

namespace {
volatile uint64_t g_sink = 0;
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
  const int64_t cpu_ns = EnvMs("PKFORGE_R20_SETUP_CPU_MS", 1000) * 1000000;
  const int64_t sleep_ms = EnvMs("PKFORGE_R20_SETUP_SLEEP_MS", 2000);
  std::vector<uint64_t> table(8u << 20);
  const int64_t c0 = ThreadCpuNs();
  uint64_t x = 88172645463325252ull, sum = 0;
  while (ThreadCpuNs() - c0 < cpu_ns) {
    for (size_t i = 0; i < table.size(); i += 1024) {
      for (size_t k = i; k < i + 1024; ++k) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        table[k] = x;
        sum += x;
      }
      if (ThreadCpuNs() - c0 >= cpu_ns) break;
    }
  }
  g_sink = sum;
  const struct timespec ts{(time_t)(sleep_ms / 1000), (long)(sleep_ms % 1000) * 1000000};
  nanosleep(&ts, nullptr);
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
