// layernorm_backward cuda reference, as PyTorch computes the LayerNorm weight
// and bias gradients under DDP, with the two all-reduces coalesced into one
// (a DDP bucket): a column-sum kernel writes per-row-split f32 partials of
// dY*X_hat and dY, a second kernel adds the splits in a fixed order
// (deterministic) into one f32 buffer [2N], one ncclAllReduce of it in f32,
// and a kernel rounds both gradients to the dtype. Written with the candidate
// ABI: it is also compiled as a candidate (ref_cuda_layernorm_backward.so).
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

#define PKF_LNB_SPLITS 32

typedef struct {
  float* buf;  // [PKF_LNB_SPLITS][2N] partials, then [2N] sums
  size_t cap;
} pkf_lnb_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  ctx->user_state = calloc(1, sizeof(pkf_lnb_state));
  return ctx->user_state == NULL;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  pkf_lnb_state* st = (pkf_lnb_state*)ctx->user_state;
  if (st == NULL) return;
  if (st->buf) cudaFree(st->buf);
  free(st);
}

// Block (32, 8): 32 columns, 8 row lanes; blockIdx.y is the row split.
__global__ void pkf_lnb_partial(const void* x, const void* dy, pkf_dtype dt, int64_t m, int64_t n,
                                int splits, float* partial) {
  __shared__ float sg[8][33], sb[8][33];
  const int64_t c = blockIdx.x * 32 + threadIdx.x;
  const int64_t per = (m + splits - 1) / splits;
  const int64_t r0 = blockIdx.y * per, r1 = r0 + per < m ? r0 + per : m;
  float g = 0.0f, b = 0.0f;
  if (c < n)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
      const float d = pkf_dload(dy, dt, r * n + c);
      g += d * pkf_dload(x, dt, r * n + c);
      b += d;
    }
  sg[threadIdx.y][threadIdx.x] = g;
  sb[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && c < n) {
    for (int k = 1; k < 8; ++k) {
      g += sg[k][threadIdx.x];
      b += sb[k][threadIdx.x];
    }
    partial[blockIdx.y * 2 * n + c] = g;
    partial[blockIdx.y * 2 * n + n + c] = b;
  }
}

__global__ void pkf_lnb_splits(const float* partial, int splits, int64_t n2, float* sums) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n2; i += (int64_t)gridDim.x * blockDim.x) {
    float s = 0.0f;
    for (int k = 0; k < splits; ++k) s += partial[k * n2 + i];
    sums[i] = s;
  }
}

__global__ void pkf_lnb_out(const float* sums, void* dgamma, void* dbeta, pkf_dtype dt, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    pkf_dstore(dgamma, dt, i, sums[i]);
    pkf_dstore(dbeta, dt, i, sums[n + i]);
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_lnb_state* st = (pkf_lnb_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int64_t m = in[0].shape[0], n = in[0].shape[1];
  int splits = (int)(m / 32);
  if (splits < 1) splits = 1;
  if (splits > PKF_LNB_SPLITS) splits = PKF_LNB_SPLITS;
  const size_t bytes = (size_t)(splits + 1) * 2 * n * sizeof(float);
  PKF_CU(pkf_cu_reserve(&st->buf, &st->cap, bytes));
  float* sums = st->buf + (size_t)splits * 2 * n;
  pkf_lnb_partial<<<dim3((unsigned)((n + 31) / 32), (unsigned)splits), dim3(32, 8), 0, s>>>(
      in[0].data, in[1].data, dt, m, n, splits, st->buf);
  pkf_lnb_splits<<<pkf_cu_blocks(2 * n), 256, 0, s>>>(st->buf, splits, 2 * n, sums);
  PKF_CU(cudaGetLastError());
  if (ctx->world_size > 1)
    PKF_NCCL(ncclAllReduce(sums, sums, (size_t)(2 * n), ncclFloat32, ncclSum, (ncclComm_t)ctx->nccl, s));
  pkf_lnb_out<<<pkf_cu_blocks(n), 256, 0, s>>>(sums, out[0].data, out[1].data, dt, n);
  PKF_CU(cudaGetLastError());
  return 0;
}
