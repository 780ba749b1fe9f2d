// reduce cuda reference (ncclReduce, root 0; output on root only); the baseline candidates are timed
// against. Written with the candidate ABI: it is also compiled as a candidate
// (ref_cuda_reduce.so) for the identical-candidate checks.
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

extern "C" int pkf_setup(pkf_context* ctx) {
  (void)ctx;
  return 0;
}
extern "C" void pkf_teardown(pkf_context* ctx) { (void)ctx; }

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  ncclComm_t comm = (ncclComm_t)ctx->nccl;
  cudaStream_t s = (cudaStream_t)stream;
  const ncclDataType_t t = pkf_nccl_type(in[0].dtype);
  PKF_NCCL(ncclReduce(in[0].data, n_out > 0 ? out[0].data : NULL, (size_t)pkf_cu_numel(&in[0]), t, ncclSum, 0, comm, s));
  return 0;
}
