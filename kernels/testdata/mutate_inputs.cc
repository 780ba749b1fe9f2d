// Correct outputs, but scribbles on its input afterwards.
// Expect CHEAT_DETECTED input_mutation.
#include "wrap_allreduce.inc"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  ((unsigned char*)in[0].data)[0] ^= 0x5a;
  return rc;
}
