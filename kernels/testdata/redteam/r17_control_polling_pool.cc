// CONTROL (benign, round 17, helper-redteam17): an idle pool that polls.
// pkf_setup starts 4 helper threads per rank that wait for work with a
// short timeout (std::condition_variable::wait_for, 200 us, in a loop: a
// common "spin a little, then sleep briefly" pool), never given any; they
// are joined in pkf_teardown. pkf_run is the naive allreduce on the main
// thread. The helpers wake every 200 us while the candidate runs (never
// while it is stopped: a stopped thread's timed wait ends in the stop), so
// they compete with the calls for the rank's CPU; nothing runs outside the
// calls. Looks for false positives of frozen_while_idle (a timed wait that
// expires around the stop), outlived_call and the probes' "starved" / "own
// load" reading.
// EXPECT: OK.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "kernels/testdata/redteam/redteam.h"

static std::mutex mu;
static std::condition_variable cv;
static bool stop = false;
static std::thread pool[4];

extern "C" int pkf_setup(pkf_context*) {
  for (std::thread& t : pool)
    t = std::thread([] {
      std::unique_lock<std::mutex> l(mu);
      while (!stop) cv.wait_for(l, std::chrono::microseconds(200));
    });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  {
    std::lock_guard<std::mutex> l(mu);
    stop = true;
  }
  cv.notify_all();
  for (std::thread& t : pool) t.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
