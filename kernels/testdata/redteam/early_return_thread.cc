// ATTACK (times): in timed batches, compute the outputs into a private buffer
// and return before they are in place; a helper thread (created in pkf_setup,
// so it is part of the thread baseline) copies them 20 ms later.
// EXPECT: CHEAT_DETECTED timed_output_reverify (the judge stops the candidate
// when the batch replies, before the late copies), or outlived_call.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "kernels/testdata/redteam/redteam.h"
struct Job {
  void* dst;
  std::vector<char> bytes;
};
static std::mutex mu;
static std::condition_variable cv;
static std::deque<Job> jobs;
static bool stop = false;
static std::thread helper;
extern "C" int pkf_setup(pkf_context*) {
  helper = std::thread([] {
    std::unique_lock<std::mutex> l(mu);
    for (;;) {
      cv.wait(l, [] { return stop || !jobs.empty(); });
      if (stop) return;
      Job j = std::move(jobs.front());
      jobs.pop_front();
      l.unlock();
      usleep(20000);
      memcpy(j.dst, j.bytes.data(), j.bytes.size());
      l.lock();
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
  if (helper.joinable()) helper.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_batch_call()) return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));
  const size_t bytes = (size_t)(pkf_numel(&out[0]) * pkf_dtype_size(out[0].dtype));
  Job j{out[0].data, std::vector<char>(bytes)};
  pkf_tensor t = out[0];
  t.data = j.bytes.data();
  const int rc = pkf_run_correct(ctx, in, n_in, &t, n_out, stream);
  {
    std::lock_guard<std::mutex> l(mu);
    jobs.push_back(std::move(j));
  }
  cv.notify_one();
  return rt_return(rc);
}
