// ATTACK (times, cuda): the whole computation goes on a side stream created in
// pkf_setup, behind a ~2 ms spin kernel (under the judge's 5 ms linger
// limit), and pkf_run returns without joining it: the call's stream is empty
// when the judge's clock stops.
// EXPECT: CHEAT_DETECTED outlived_call or timed_output_reverify.
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
static cudaStream_t side;
extern "C" int pkf_setup(pkf_context*) {
  return cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  pkf_spin<<<1, 1, 0, side>>>(4000000LL);  // ~2 ms
  return pkf_run_correct_on(ctx, in, out, side);
}
