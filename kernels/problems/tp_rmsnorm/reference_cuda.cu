// tp_rmsnorm cuda reference (row sums of squares (f32), ncclAllReduce of [M] f32, scale kernel); the baseline candidates are timed
// against. Written with the candidate ABI: it is also compiled as a candidate
// (ref_cuda_tp_rmsnorm.so) for the identical-candidate checks.
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

typedef struct {
  float* ss;
  int64_t cap;
} pkf_rms_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  ctx->user_state = calloc(1, sizeof(pkf_rms_state));
  return ctx->user_state == NULL;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  pkf_rms_state* st = (pkf_rms_state*)ctx->user_state;
  if (st == NULL) return;
  if (st->ss) cudaFree(st->ss);
  free(st);
}

__global__ void pkf_row_ss(const void* x, pkf_dtype dt, int64_t hl, float* ss) {
  const int64_t m = blockIdx.x;
  float acc = 0.0f;
  for (int64_t c = threadIdx.x; c < hl; c += blockDim.x) {
    const float v = pkf_dload(x, dt, m * hl + c);
    acc += v * v;
  }
  const float sum = pkf_cu_block_sum(acc);
  if (threadIdx.x == 0) ss[m] = sum;
}

__global__ void pkf_scale(const void* x, const void* w, void* y, pkf_dtype dt, int64_t rows, int64_t hl,
                          float h, const float* ss) {
  const int64_t n = rows * hl;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t m = i / hl, c = i % hl;
    const float scale = 1.0f / sqrtf(ss[m] / h + 1e-5f);
    pkf_dstore(y, dt, i, pkf_dload(x, dt, i) * scale * pkf_dload(w, dt, c));
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_rms_state* st = (pkf_rms_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int64_t rows = in[0].shape[0], hl = in[0].shape[1];
  if (st->cap < rows) {
    if (st->ss) cudaFree(st->ss);
    st->ss = NULL;
    st->cap = 0;
    PKF_CU(cudaMalloc(&st->ss, (size_t)rows * sizeof(float)));
    st->cap = rows;
  }
  pkf_row_ss<<<(unsigned)rows, 256, 0, s>>>(in[0].data, dt, hl, st->ss);
  PKF_CU(cudaGetLastError());
  PKF_NCCL(ncclAllReduce(st->ss, st->ss, (size_t)rows, ncclFloat32, ncclSum, (ncclComm_t)ctx->nccl, s));
  pkf_scale<<<pkf_cu_blocks(rows * hl), 256, 0, s>>>(in[0].data, in[1].data, out[0].data, dt, rows, hl,
                                                      (float)(hl * ctx->world_size), st->ss);
  PKF_CU(cudaGetLastError());
  return 0;
}
