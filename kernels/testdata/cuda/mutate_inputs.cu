// Correct outputs, then scribbles on its input. Expect CHEAT_DETECTED input_mutation.
#include "wrap_allreduce_cuda.inc"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t, void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  int rc = pkf_run_correct_on(ctx, in, out, s);
  cudaMemsetAsync(in[0].data, 0x5a, 2, s);
  return rc;
}
