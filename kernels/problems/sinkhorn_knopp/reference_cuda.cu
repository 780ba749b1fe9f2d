// sinkhorn_knopp cuda reference, PKB's PyTorch loop with its element-wise
// steps fused as a strong user writes them, in the [B, NP] layout (PKB works
// on the transposed view): an exp kernel into an f32 work matrix (the division
// by the all-reduced total mass cancels in the first prototype normalization,
// so it and its all-reduce are left out); per iteration a split column-sum
// kernel + a fixed-order split reduction give the prototype sums, one
// ncclAllReduce of [NP], and one block per sample divides by the prototype
// sums and NP, sums the row and divides by it and TB. The last iteration
// writes the output in the dtype and leaves out PKB's "/ TB then * TB" (the
// same values up to rounding). Written with the candidate ABI: it is also
// compiled as a candidate (ref_cuda_sinkhorn_knopp.so).
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

#define PKF_SK_SPLITS 32

typedef struct {
  float* buf;
  size_t cap;
} pkf_sk_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  ctx->user_state = calloc(1, sizeof(pkf_sk_state));
  return ctx->user_state == NULL;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  pkf_sk_state* st = (pkf_sk_state*)ctx->user_state;
  if (st == NULL) return;
  if (st->buf) cudaFree(st->buf);
  free(st);
}

// Called repeatedly in one kernel: the barrier first keeps a slow thread's
// read of the previous sum ahead of the next write to the shared buffer.
__device__ __forceinline__ float pkf_sk_block_sum(float v) {
  __syncthreads();
  return pkf_cu_block_sum(v);
}

__global__ void pkf_sk_exp(const void* x, pkf_dtype dt, float* q, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    q[i] = expf(pkf_dload(x, dt, i) / 0.07f);
}

// Block (32, 8): 32 prototypes, 8 sample lanes; blockIdx.y is the sample split.
__global__ void pkf_sk_colsum(const float* q, int64_t b, int64_t np, int splits, float* partial) {
  __shared__ float sm[8][33];
  const int64_t k = blockIdx.x * 32 + threadIdx.x;
  const int64_t per = (b + splits - 1) / splits;
  const int64_t r0 = blockIdx.y * per, r1 = r0 + per < b ? r0 + per : b;
  float acc = 0.0f;
  if (k < np)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) acc += q[r * np + k];
  sm[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && k < np) {
    for (int j = 1; j < 8; ++j) acc += sm[j][threadIdx.x];
    partial[blockIdx.y * np + k] = acc;
  }
}

__global__ void pkf_sk_splits(const float* partial, int splits, int64_t np, float* sums) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < np; k += (int64_t)gridDim.x * blockDim.x) {
    float s = 0.0f;
    for (int j = 0; j < splits; ++j) s += partial[j * np + k];
    sums[k] = s;
  }
}

// One block per sample row: q[k] / proto[k] / NP, normalized to sum 1, times
// `post` (1/TB, or 1 on the last iteration), into q or (last iteration) into
// the output in the dtype.
__global__ void pkf_sk_rows(float* q, int64_t b, int64_t np, const float* proto, float post, void* out,
                            pkf_dtype dt) {
  for (int64_t r = blockIdx.x; r < b; r += gridDim.x) {
    float* row = q + r * np;
    float acc = 0.0f;
    for (int64_t k = threadIdx.x; k < np; k += blockDim.x) acc += row[k] / proto[k] / (float)np;
    const float s = pkf_sk_block_sum(acc);
    for (int64_t k = threadIdx.x; k < np; k += blockDim.x) {
      const float v = row[k] / proto[k] / (float)np / s * post;
      if (out != NULL) pkf_dstore(out, dt, r * np + k, v);
      else row[k] = v;
    }
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_sk_state* st = (pkf_sk_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const int64_t b = in[0].shape[0], np = in[0].shape[1], n = b * np;
  const float tb = (float)(ctx->world_size * b);
  int splits = (int)(b / 32);
  if (splits < 1) splits = 1;
  if (splits > PKF_SK_SPLITS) splits = PKF_SK_SPLITS;
  const size_t floats = (size_t)((PKF_SK_SPLITS + 1) * np + n);
  PKF_CU(pkf_cu_reserve(&st->buf, &st->cap, floats * sizeof(float)));
  float* col_partial = st->buf;
  float* proto = col_partial + (size_t)PKF_SK_SPLITS * np;
  float* q = proto + np;  // the f32 working matrix [B, NP]
  ncclComm_t comm = (ncclComm_t)ctx->nccl;
  pkf_sk_exp<<<pkf_cu_blocks(n), 256, 0, s>>>(in[0].data, in[0].dtype, q, n);
  PKF_CU(cudaGetLastError());
  const int rows = (int)(b < 65535 ? b : 65535);
  for (int it = 0; it < 3; ++it) {
    pkf_sk_colsum<<<dim3((unsigned)((np + 31) / 32), (unsigned)splits), dim3(32, 8), 0, s>>>(q, b, np, splits,
                                                                                              col_partial);
    pkf_sk_splits<<<pkf_cu_blocks(np), 256, 0, s>>>(col_partial, splits, np, proto);
    PKF_CU(cudaGetLastError());
    if (ctx->world_size > 1) PKF_NCCL(ncclAllReduce(proto, proto, (size_t)np, ncclFloat32, ncclSum, comm, s));
    pkf_sk_rows<<<rows, 256, 0, s>>>(q, b, np, proto, it == 2 ? 1.0f : 1.0f / tb, it == 2 ? out[0].data : NULL,
                                     out[0].dtype);
    PKF_CU(cudaGetLastError());
  }
  return 0;
}
