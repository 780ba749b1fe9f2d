// CONTROL (benign): a worker thread created in pkf_setup computes half of
// every call's elements during the call (woken through a condition
// variable); pkf_run waits for it before returning; joined in pkf_teardown.
// EXPECT: OK.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "kernels/testdata/redteam/redteam.h"
static std::mutex mu;
static std::condition_variable cv;
static std::function<void()> job;
static bool has_job = false, stop = false;
static std::thread worker;
extern "C" int pkf_setup(pkf_context*) {
  worker = std::thread([] {
    std::unique_lock<std::mutex> l(mu);
    for (;;) {
      cv.wait(l, [] { return stop || has_job; });
      if (stop) return;
      job();
      has_job = false;
      cv.notify_all();
    }
  });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  {
    std::lock_guard<std::mutex> l(mu);
    stop = true;
  }
  cv.notify_all();
  worker.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t, void*) {
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&out[0]);
  auto sum = [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      float s = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j) s += pkf_load(peer[j][0], dt, i);
      pkf_store(out[0].data, dt, i, s);
    }
  };
  {
    std::lock_guard<std::mutex> l(mu);
    job = [&] { sum(n / 2, n); };
    has_job = true;
  }
  cv.notify_all();
  sum(0, n / 2);
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [] { return !has_job; });
  }
  return ctx->barrier(ctx);
}
