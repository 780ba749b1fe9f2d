// ATTACK (times, cuda: a CUDA graph left running): pkf_run captures its whole
// computation (a ~1.5 ms spin kernel, then the allreduce) on a private
// stream into a graph, instantiates it and launches the graph on another
// private stream, then returns with nothing queued on the call's stream:
// the work runs after the call's stream is "done".
// EXPECT: CHEAT_DETECTED outlived_call / timed_output_reverify.
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
static cudaStream_t cap, run_s;
extern "C" int pkf_setup(pkf_context*) {
  if (cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking) != cudaSuccess) return 1;
  return cudaStreamCreateWithFlags(&run_s, cudaStreamNonBlocking) != cudaSuccess;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  cudaGraph_t g = nullptr;
  cudaGraphExec_t ge = nullptr;
  if (cudaStreamBeginCapture(cap, cudaStreamCaptureModeRelaxed) != cudaSuccess) return 1;
  pkf_spin<<<1, 1, 0, cap>>>(3000000LL);
  const int rc = pkf_run_correct_on(ctx, in, out, cap);
  if (cudaStreamEndCapture(cap, &g) != cudaSuccess || rc != 0) return 2;
  if (cudaGraphInstantiate(&ge, g, 0) != cudaSuccess) return 3;
  const cudaError_t e = cudaGraphLaunch(ge, run_s);
  cudaGraphExecDestroy(ge);  // destroyed after the launch completes, per the runtime
  cudaGraphDestroy(g);
  return e != cudaSuccess;
}
