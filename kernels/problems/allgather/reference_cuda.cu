// allgather cuda reference (ncclAllGather); the baseline candidates are timed
// against. Written with the candidate ABI: it is also compiled as a candidate
// (ref_cuda_allgather.so) for the identical-candidate checks.
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
  const ncclDataType_t t = pkf_nccl_type(out[0].dtype);
  PKF_NCCL(ncclAllGather(in[0].data, out[0].data, (size_t)pkf_cu_numel(&in[0]), t, comm, s));
  return 0;
}
