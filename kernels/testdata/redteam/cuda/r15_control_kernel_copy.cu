// CONTROL (benign, cuda, red team round 15): the honest yardstick of the
// round's world-size-1 attacks (r15_persistent_mailbox, r15_chunk_k8,
// r15_ce_hog_loop): one small copy kernel per call on the call's stream (the
// allreduce of one rank is a copy; NCCL at larger world sizes), all of the
// call's work, nothing shared between calls. The attacks' per-call work is
// this same kernel (or its body), so their speedup over this one's in the
// same test is what they forge.
// EXPECT: OK.
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
#include "kernels/testdata/redteam/cuda/r15_cmd.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t st = (cudaStream_t)stream;
  if (ctx->world_size != 1) return pkf_run_correct_on(ctx, in, out, st);
  r15_copy<<<1, 128, 0, st>>>((const char*)in[0].data, (char*)out[0].data, pkf_bytes(&out[0]));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
