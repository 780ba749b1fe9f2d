// CONTROL (benign, cuda): a correct candidate that uses a host callback
// (cudaLaunchHostFunc) inside its call, on the call's stream, to count its
// calls. Everything is finished when the stream is synchronized. The CUDA
// runtime runs host functions on a thread of its own, which it creates on
// first use: here that first use is inside a call, after the judge took the
// thread baseline (after pkf_setup).
// EXPECT: OK. (Predicted from reading judge.cc ThreadCheck: CHEAT_DETECTED
// outlived_call "N threads after the call, N-1 after setup", a false
// positive against an honest candidate; not run: no GPU here.)
#include <atomic>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
static std::atomic<long> calls{0};
static void CUDART_CB count(void*) { calls.fetch_add(1); }
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  const int rc = pkf_run_correct_on(ctx, in, out, s);
  return rc != 0 ? rc : cudaLaunchHostFunc(s, count, nullptr) != cudaSuccess;
}
