// CONTROL (benign, false-positive probe): a thread pool as OpenMP or a
// task library would start it - 64 worker threads per rank created in
// pkf_setup, parked on a condition variable for the whole evaluation and
// joined in pkf_teardown; pkf_run is the naive allreduce. Every freeze has to
// stop and verify 65 threads per rank (the judge charges that to the
// candidate's batch), and the rank's own account of a batch does not cover
// the freeze: neither may turn an honest candidate into CHEAT_DETECTED
// (frozen_while_idle, wallclock_crosscheck) or a TIMEOUT.
// EXPECT: OK (its speedup may be lower than the naive candidate's).
#include <condition_variable>
#include <mutex>
#include <thread>

#include "kernels/testdata/redteam/redteam.h"
static std::mutex mu;
static std::condition_variable cv;
static bool stop = false;
static std::vector<std::thread> pool;
extern "C" int pkf_setup(pkf_context*) {
  for (int i = 0; i < 64; ++i)
    pool.emplace_back([] {
      std::unique_lock<std::mutex> l(mu);
      cv.wait(l, [] { return stop; });
    });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  {
    std::lock_guard<std::mutex> l(mu);
    stop = true;
  }
  cv.notify_all();
  for (auto& t : pool) t.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
