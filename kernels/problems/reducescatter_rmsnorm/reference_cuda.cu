// reducescatter_rmsnorm cuda reference, as PyTorch does it
// (reduce_scatter_tensor in the dtype, then the normalization): ncclReduceScatter
// into a staging buffer [R, H], then one block per row: mean over ranks
// (divide by world), f32 sum of squares, scale by rsqrt and gamma. Written with
// the candidate ABI: it is also compiled as a candidate
// (ref_cuda_reducescatter_rmsnorm.so).
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

typedef struct {
  void* stage;
  size_t cap;
} pkf_rsn_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  ctx->user_state = calloc(1, sizeof(pkf_rsn_state));
  return ctx->user_state == NULL;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  pkf_rsn_state* st = (pkf_rsn_state*)ctx->user_state;
  if (st == NULL) return;
  if (st->stage) cudaFree(st->stage);
  free(st);
}

__global__ void pkf_rsn_norm(const void* summed, const void* gamma, void* y, pkf_dtype dt, int64_t h,
                             float inv_world) {
  const int64_t row = blockIdx.x;
  float acc = 0.0f;
  for (int64_t c = threadIdx.x; c < h; c += blockDim.x) {
    const float v = pkf_dload(summed, dt, row * h + c) * inv_world;
    acc += v * v;
  }
  const float inv = rsqrtf(pkf_cu_block_sum(acc) / (float)h + 1e-5f);
  for (int64_t c = threadIdx.x; c < h; c += blockDim.x)
    pkf_dstore(y, dt, row * h + c, pkf_dload(summed, dt, row * h + c) * inv_world * inv * pkf_dload(gamma, dt, c));
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_rsn_state* st = (pkf_rsn_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int64_t rows = out[0].shape[0], h = out[0].shape[1];
  const size_t bytes = (size_t)(rows * h * pkf_cu_elem(dt));
  PKF_CU(pkf_cu_reserve(&st->stage, &st->cap, bytes));
  PKF_NCCL(ncclReduceScatter(in[0].data, st->stage, (size_t)(rows * h), pkf_nccl_type(dt), ncclSum,
                             (ncclComm_t)ctx->nccl, s));
  pkf_rsn_norm<<<(unsigned)rows, 256, 0, s>>>(st->stage, in[1].data, out[0].data, dt, h,
                                              1.0f / (float)ctx->world_size);
  PKF_CU(cudaGetLastError());
  return 0;
}
