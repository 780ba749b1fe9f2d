// Wrong candidate: the correct allreduce of every element but the last, which
// keeps the poison the harness wrote before the call. Tests expect
// WRONG_OUTPUT with `unwritten` set and the poison_unwritten check failed.
#include "wrap_allreduce_cuda.inc"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  return ncclAllReduce(in[0].data, out[0].data, pkf_n(&out[0]) - 1, pkf_t(out[0].dtype), ncclSum,
                       (ncclComm_t)ctx->nccl, (cudaStream_t)stream) == ncclSuccess ? 0 : 1;
}
