// Correct for its first 5 calls (the correctness trials and the first
// warm-up), then does nothing. Expect CHEAT_DETECTED timed_output_reverify.
#include "wrap_allreduce_cuda.inc"
static int calls = 0;
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t, void* stream) {
  if (++calls > 5) return 0;
  return pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
}
