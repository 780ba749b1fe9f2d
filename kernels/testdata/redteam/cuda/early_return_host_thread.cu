// ATTACK (times, cuda): pkf_run computes into a private buffer and returns;
// a host thread created in pkf_setup (part of the thread baseline) launches
// the copy into the real outputs 1 ms later on its own stream.
// EXPECT: CHEAT_DETECTED timed_output_reverify or outlived_call.
#include <unistd.h>

#include <atomic>
#include <thread>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
static std::thread helper;
static std::atomic<bool> stop{false};
static std::atomic<void*> job_dst{nullptr};
static void* tmp = nullptr;
static size_t tmp_bytes = 0;
static cudaStream_t side;
extern "C" int pkf_setup(pkf_context* ctx) {
  if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 1;
  const int device = ctx->device;
  helper = std::thread([device] {
    cudaSetDevice(device);
    while (!stop.load()) {
      void* dst = job_dst.exchange(nullptr);
      if (dst == nullptr) {
        usleep(50);
        continue;
      }
      usleep(1000);
      cudaMemcpyAsync(dst, tmp, tmp_bytes, cudaMemcpyDeviceToDevice, side);
      cudaStreamSynchronize(side);
    }
  });
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  stop = true;
  if (helper.joinable()) helper.join();
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  const size_t bytes = pkf_bytes(&out[0]);
  if (tmp == nullptr) {
    if (cudaMalloc(&tmp, bytes) != cudaSuccess) return 2;
    tmp_bytes = bytes;
  }
  pkf_tensor t = out[0];
  t.data = tmp;
  const int rc = pkf_run_correct_on(ctx, in, &t, s);
  cudaStreamSynchronize(s);
  job_dst = out[0].data;
  return rc;
}
