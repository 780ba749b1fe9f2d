// vocab_parallel_cross_entropy cuda reference, as Megatron's
// _VocabParallelCrossEntropy does it in PyTorch (PKB 73's reference), with
// its element-wise steps fused into three simple kernels: a warp per row
// takes the local max (f32), ncclAllReduce(max); a warp per row sums
// exp(x - max) and picks the target's x - max when this rank owns it (0
// otherwise), one ncclAllReduce(sum) of both [2][B*T] f32 arrays; a last
// kernel writes log(sum) - target logit in the dtype. World 1 skips the
// all-reduces. Written with the candidate ABI: it is also compiled as a
// candidate.
#include <math.h>

#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

typedef struct {
  float* buf;  // [3][rows]: max, sum of exponentials, target logit
  int64_t cap;
} xent_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  xent_state* s = (xent_state*)calloc(1, sizeof(xent_state));
  if (s == NULL) return 1;
  ctx->user_state = s;
  return 0;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  xent_state* s = (xent_state*)ctx->user_state;
  if (s == NULL) return;
  cudaFree(s->buf);
  free(s);
  ctx->user_state = NULL;
}

__global__ void xent_max(const void* x, pkf_dtype dt, int64_t rows, int64_t vl, float* mx) {
  const int64_t row = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float m = -INFINITY;
  for (int64_t v = lane; v < vl; v += 32) m = fmaxf(m, pkf_dload(x, dt, row * vl + v));
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) mx[row] = m;
}

__global__ void xent_sum(const void* x, pkf_dtype dt, const long long* target, int64_t rows, int64_t vl,
                         int64_t start, const float* mx, float* sum, float* pred) {
  const int64_t row = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float m = mx[row];
  float s = 0;
  for (int64_t v = lane; v < vl; v += 32) s += expf(pkf_dload(x, dt, row * vl + v) - m);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) {
    sum[row] = s;
    const long long t = target[row] - start;
    pred[row] = t >= 0 && t < vl ? pkf_dload(x, dt, row * vl + t) - m : 0.0f;
  }
}

__global__ void xent_loss(const float* sum, const float* pred, int64_t rows, void* loss, pkf_dtype dt) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows; i += (int64_t)gridDim.x * blockDim.x)
    pkf_dstore(loss, dt, i, logf(sum[i]) - pred[i]);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  xent_state* st = (xent_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = in[0].dtype;
  const int64_t rows = in[0].shape[0] * in[0].shape[1], vl = in[0].shape[2];
  if (st->cap < rows) {
    cudaFree(st->buf);
    st->buf = NULL;
    st->cap = 0;
    PKF_CU(cudaMalloc(&st->buf, (size_t)(3 * rows) * sizeof(float)));
    st->cap = rows;
  }
  float* mx = st->buf;
  float* sum = st->buf + rows;
  float* pred = st->buf + 2 * rows;
  ncclComm_t comm = (ncclComm_t)ctx->nccl;
  const int blocks = (int)((rows * 32 + 255) / 256);
  xent_max<<<blocks, 256, 0, s>>>(in[0].data, dt, rows, vl, mx);
  PKF_CU(cudaGetLastError());
  if (ctx->world_size > 1) PKF_NCCL(ncclAllReduce(mx, mx, (size_t)rows, ncclFloat32, ncclMax, comm, s));
  xent_sum<<<blocks, 256, 0, s>>>(in[0].data, dt, (const long long*)in[1].data, rows, vl, ctx->rank * vl, mx, sum,
                                  pred);
  PKF_CU(cudaGetLastError());
  if (ctx->world_size > 1) PKF_NCCL(ncclAllReduce(sum, sum, (size_t)(2 * rows), ncclFloat32, ncclSum, comm, s));
  xent_loss<<<pkf_cu_blocks(rows), 256, 0, s>>>(sum, pred, rows, out[0].data, out[0].dtype);
  PKF_CU(cudaGetLastError());
  return 0;
}
