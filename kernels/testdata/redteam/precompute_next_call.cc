// ATTACK (precomputation): the inputs of every call of a timed batch are in
// shared memory before the batch starts. After the first call each rank
// reads its peers' inputs straight from the candidate side's data segment
// (offsets published once through the signal pads, no barrier), and a helper
// thread (created in pkf_setup, blocked on a condition variable between
// jobs) computes call k+1's outputs right after call k returns, while the
// harness prepares the next call; a call whose outputs are already there
// returns at once.
// EXPECT: CHEAT_DETECTED poison_at_start (outputs written before their call
// started).
#include <condition_variable>
#include <mutex>
#include <thread>

#include "kernels/testdata/redteam/redteam.h"
static char* g_base = NULL;
static size_t g_size = 0;
static int64_t g_pub_in = -1, g_prev_in = -1, g_stride = 0;
static pkf_context* g_ctx = NULL;
static pkf_dtype g_dt;
static int64_t g_n = 0;
static std::mutex mu;
static std::condition_variable cv;
static bool has_job = false, stop = false;
static int64_t job_in = 0, job_out = 0, done_out = -1;
static std::vector<float> done_key;  // the first input element of every rank the job read
static uint64_t job_id = 0, done_id = 0;
static std::thread helper;

// First input element of every rank for the call whose own input is at in_off
// (inputs are fresh random: a stale precomputation never matches).
static std::vector<float> key_of(int64_t in_off) {
  std::vector<float> k;
  for (int32_t j = 0; j < g_ctx->world_size; ++j) {
    const int64_t peer = (int64_t)((volatile uint32_t*)g_ctx->peer_flags[j])[0] + in_off - g_pub_in;
    k.push_back(pkf_load(g_base + peer, g_dt, 0));
  }
  return k;
}
static void compute(int64_t in_off, int64_t out_off) {
  const int64_t shift = in_off - g_pub_in;
  for (int64_t i = 0; i < g_n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < g_ctx->world_size; ++j) {
      const int64_t peer = (int64_t)((volatile uint32_t*)g_ctx->peer_flags[j])[0] + shift;
      s += pkf_load(g_base + peer, g_dt, i);
    }
    pkf_store(g_base + out_off, g_dt, i, s);
  }
}
extern "C" int pkf_setup(pkf_context* ctx) {
  g_ctx = ctx;
  helper = std::thread([] {
    std::unique_lock<std::mutex> l(mu);
    for (;;) {
      cv.wait(l, [] { return stop || has_job; });
      if (stop) return;
      const int64_t in = job_in, out = job_out;
      const uint64_t id = job_id;
      l.unlock();
      std::vector<float> key = key_of(in);
      compute(in, out);
      l.lock();
      done_key = key;
      done_out = out;
      done_id = id;
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
  if (helper.joinable()) helper.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const bool batch = rt_batch_call();
  if (g_base == NULL) {
    rt_mapping_of(in[0].data, &g_base, &g_size);
    g_dt = out[0].dtype;
    g_n = pkf_numel(&out[0]);
    g_pub_in = (char*)in[0].data - g_base;
    ((volatile uint32_t*)ctx->peer_flags[ctx->rank])[0] = (uint32_t)g_pub_in;
    g_prev_in = g_pub_in;
    return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));  // barriers: offsets visible
  }
  const int64_t cur_in = (char*)in[0].data - g_base, cur_out = (char*)out[0].data - g_base;
  if (cur_in > g_prev_in && (g_stride == 0 || cur_in - g_prev_in < g_stride))
    g_stride = cur_in - g_prev_in;
  g_prev_in = cur_in;
  bool ready;
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [] { return !has_job; });
    ready = batch && done_id == (uint64_t)rt_calls - 1 && done_out == cur_out &&
            done_key == key_of(cur_in);
  }
  static uint64_t hits = 0;
  if (ready) {
    if (++hits == 50) rt_log("50 calls answered by precomputed outputs");
  } else {
    compute(cur_in, cur_out);
  }
  if (batch && g_stride > 0 && (size_t)(cur_out + g_stride) + 4096 < g_size) {
    std::lock_guard<std::mutex> l(mu);
    job_in = cur_in + g_stride;
    job_out = cur_out + g_stride;
    job_id = (uint64_t)rt_calls;
    has_job = true;
    cv.notify_all();
  }
  return rt_return(0);
}
