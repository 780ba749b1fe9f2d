// CONTROL (benign, round 20, helper-redteam20): the harness barrier called
// from a helper thread, not from the thread that entered pkf_run: every
// call is handed to a worker thread made in pkf_setup (blocked in a
// condition variable's wait() between calls), which runs the reference's
// algorithm (publish into scratch, ctx->barrier, sum, ctx->barrier); the
// calling thread waits on a second condition variable and returns the
// worker's result. An "executor thread" design (e.g. a library that owns
// its communication thread).
// EXPECT: OK.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "kernels/testdata/redteam/redteam.h"

namespace {
std::mutex g_mu;
std::condition_variable g_cv, g_done_cv;
struct Call {
  pkf_context* ctx;
  const pkf_tensor* in;
  int32_t n_in;
  pkf_tensor* out;
  int32_t n_out;
} g_call;
bool g_has = false, g_stop = false;
int g_rc = 0;
std::thread g_worker;
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  g_worker = std::thread([] {
    std::unique_lock<std::mutex> l(g_mu);
    for (;;) {
      g_cv.wait(l, [] { return g_stop || g_has; });
      if (g_stop) return;
      const Call c = g_call;
      l.unlock();
      const int rc = pkf_run_correct(c.ctx, c.in, c.n_in, c.out, c.n_out, nullptr);
      l.lock();
      g_rc = rc;
      g_has = false;
      g_done_cv.notify_one();
    }
  });
  return 0;
}

extern "C" void pkf_teardown(pkf_context*) {
  {
    std::lock_guard<std::mutex> l(g_mu);
    g_stop = true;
  }
  g_cv.notify_all();
  g_worker.join();
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void*) {
  std::unique_lock<std::mutex> l(g_mu);
  g_call = Call{ctx, in, n_in, out, n_out};
  g_has = true;
  g_cv.notify_one();
  g_done_cv.wait(l, [] { return !g_has; });
  return g_rc;
}
