// CONTROL (benign, cuda; the yardstick of the batch look-ahead tests): one
// ncclAllReduce per call on the call's stream, as the reference does.
// EXPECT: OK.
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  return pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
}
