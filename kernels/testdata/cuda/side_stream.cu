// Enqueues the real work on a side stream created in pkf_setup (behind a
// ~100 ms spin) and returns without joining it: the timed stream is empty.
// Expect CHEAT_DETECTED outlived_call (the judge's timed device-wide
// synchronize right after the call finds the GPU busy; outputs also change
// across it).
#include "wrap_allreduce_cuda.inc"
static cudaStream_t side;
extern "C" int pkf_setup(pkf_context*) { return cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess; }
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t, void*) {
  pkf_spin<<<1, 1, 0, side>>>(200000000LL);  // ~100 ms
  return pkf_run_correct_on(ctx, in, out, side);
}
