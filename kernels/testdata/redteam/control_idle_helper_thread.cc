// CONTROL (benign): a helper thread created in pkf_setup that only waits on a
// condition variable (a futex) for the whole evaluation and is joined in
// pkf_teardown; pkf_run is the naive allreduce.
// EXPECT: OK.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "kernels/testdata/redteam/redteam.h"
static std::mutex mu;
static std::condition_variable cv;
static bool stop = false;
static std::thread helper;
extern "C" int pkf_setup(pkf_context*) {
  helper = std::thread([] {
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
  helper.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
