// CONTROL (benign, cuda): the work runs on a private stream created in
// pkf_setup, forked from and joined back into the call's stream with events
// (the documented way to use other streams).
// EXPECT: OK.
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
static cudaStream_t side;
static cudaEvent_t fork_ev, join_ev;
extern "C" int pkf_setup(pkf_context*) {
  if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 1;
  if (cudaEventCreateWithFlags(&fork_ev, cudaEventDisableTiming) != cudaSuccess) return 2;
  return cudaEventCreateWithFlags(&join_ev, cudaEventDisableTiming) != cudaSuccess;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  cudaEventRecord(fork_ev, s);
  cudaStreamWaitEvent(side, fork_ev, 0);
  const int rc = pkf_run_correct_on(ctx, in, out, side);
  cudaEventRecord(join_ev, side);
  cudaStreamWaitEvent(s, join_ev, 0);
  return rc;
}
