// Correct for its first PKF_HANG_AFTER calls (default 5: with --trials 2
// --warmup 2 that is both trials, the determinism re-run and the warm-up),
// then launches a kernel that never ends (on every rank) and returns. The
// harness waits for the call's stop event forever. Expect TIMEOUT in
// PHASE_TIMING naming the stuck rank(s), a bounded return of the launcher,
// no process left behind, and a healthy GPU afterwards.
#include "wrap_allreduce_cuda.inc"
#ifndef PKF_HANG_AFTER
#define PKF_HANG_AFTER 5
#endif
static int calls = 0;
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (++calls > PKF_HANG_AFTER) {
    pkf_spin<<<1, 1, 0, s>>>(0x3fffffffffffffffLL);  // ~10^10 s: forever
    return cudaGetLastError() != cudaSuccess;
  }
  return pkf_run_correct_on(ctx, in, out, s);
}
