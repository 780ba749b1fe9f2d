// moe_all2all cuda reference, as all_to_all_single does it with split sizes:
// one NCCL group of ncclSend/ncclRecv pairs, straight from x into y (no
// staging: every block is contiguous on both sides). Written with the
// candidate ABI: it is also compiled as a candidate (ref_cuda_moe_all2all.so).
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
  cudaStream_t s = (cudaStream_t)stream;
  const int w = ctx->world_size, r = ctx->rank;
  const int64_t m = in[0].shape[0], n = in[0].shape[1], es = pkf_cu_elem(in[0].dtype);
  const int64_t chunk = m / w, mine = r == w - 1 ? chunk + m % w : chunk;
  if (w == 1) {
    PKF_CU(cudaMemcpyAsync(out[0].data, in[0].data, (size_t)(m * n * es), cudaMemcpyDeviceToDevice, s));
    return 0;
  }
  const ncclDataType_t t = pkf_nccl_type(in[0].dtype);
  ncclComm_t comm = (ncclComm_t)ctx->nccl;
  PKF_NCCL(ncclGroupStart());
  for (int j = 0; j < w; ++j) {
    const int64_t split_j = j == w - 1 ? chunk + m % w : chunk;
    PKF_NCCL(ncclSend((const char*)in[0].data + j * chunk * n * es, (size_t)(split_j * n), t, j, comm, s));
    PKF_NCCL(ncclRecv((char*)out[0].data + j * mine * n * es, (size_t)(mine * n), t, j, comm, s));
  }
  PKF_NCCL(ncclGroupEnd());
  return 0;
}
