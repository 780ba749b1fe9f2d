// load_balancing_loss cuda reference, the PyTorch computation fused as a strong
// user would write it: one routing kernel (one token per thread: softmax in
// f32, top-k by logit, lower index first on ties; per-block f32 sums of the
// probabilities reduced in shared memory in a fixed order, integer counts by
// shared-memory atomics), one kernel that adds the block partials in order and packs
// [local loss, counts[TOPK][E]] into one f32 buffer, one ncclAllReduce of it,
// one kernel that divides. Written with the candidate ABI: it is also compiled
// as a candidate (ref_cuda_load_balancing_loss.so).
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

#define PKF_LBL_BLOCKS 128
#define PKF_LBL_THREADS 128

typedef struct {
  float* partial;  // [PKF_LBL_BLOCKS][E + TOPK*E], then [1 + TOPK*E] packed
  size_t cap;
} pkf_lbl_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  ctx->user_state = calloc(1, sizeof(pkf_lbl_state));
  return ctx->user_state == NULL;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  pkf_lbl_state* st = (pkf_lbl_state*)ctx->user_state;
  if (st == NULL) return;
  if (st->partial) cudaFree(st->partial);
  free(st);
}

// Dynamic shared memory: TOPK*E int counts (integer atomics: exact and
// order-independent); the probability sums are reduced in a fixed order.
__global__ void pkf_lbl_route(const void* logits, pkf_dtype dt, int64_t m, int e_dim, int topk, float* partial) {
  extern __shared__ int cnt[];
  __shared__ float red[PKF_LBL_THREADS];
  const int stride = e_dim + topk * e_dim;
  float p[64];
  float psum[64];
  unsigned char taken[64];
  for (int i = threadIdx.x; i < topk * e_dim; i += blockDim.x) cnt[i] = 0;
  for (int e = 0; e < e_dim; ++e) psum[e] = 0.0f;
  __syncthreads();
  float* out = partial + blockIdx.x * (int64_t)stride;
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < m; t += (int64_t)gridDim.x * blockDim.x) {
    float mx = -INFINITY;
    for (int e = 0; e < e_dim; ++e) {
      p[e] = pkf_dload(logits, dt, t * e_dim + e);
      mx = fmaxf(mx, p[e]);
      taken[e] = 0;
    }
    for (int k = 0; k < topk; ++k) {
      int best = -1;
      for (int e = 0; e < e_dim; ++e)
        if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
      taken[best] = 1;
      atomicAdd(&cnt[k * e_dim + best], 1);
    }
    float z = 0.0f;
    for (int e = 0; e < e_dim; ++e) {
      p[e] = __expf(p[e] - mx);
      z += p[e];
    }
    const float inv = 1.0f / z;
    for (int e = 0; e < e_dim; ++e) psum[e] += p[e] * inv;
  }
  for (int e = 0; e < e_dim; ++e) {
    red[threadIdx.x] = psum[e];
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[e] = red[0];
    __syncthreads();
  }
  for (int i = threadIdx.x; i < topk * e_dim; i += blockDim.x) out[e_dim + i] = (float)cnt[i];
}

__global__ void pkf_lbl_pack(const float* partial, int blocks, int64_t m, int e_dim, int topk, float* packed) {
  __shared__ float psum[64];
  const int stride = e_dim + topk * e_dim;
  for (int v = threadIdx.x; v < stride; v += blockDim.x) {
    float s = 0.0f;
    for (int b = 0; b < blocks; ++b) s += partial[b * stride + v];
    if (v < e_dim) psum[v] = s;
    else packed[1 + v - e_dim] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float local = 0.0f;
    for (int k = 0; k < topk; ++k)
      for (int e = 0; e < e_dim; ++e) local += (packed[1 + k * e_dim + e] / (float)m) * (psum[e] / (float)m);
    packed[0] = local * (float)e_dim;
  }
}

__global__ void pkf_lbl_out(const float* packed, void* loss, void* tpe, pkf_dtype dt, int w, int64_t m, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) pkf_dstore(tpe, dt, i, packed[1 + i] / ((float)w * (float)m));
  if (threadIdx.x == 0) pkf_dstore(loss, dt, 0, packed[0] / (float)w);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_lbl_state* st = (pkf_lbl_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int64_t m = in[0].shape[0];
  const int e_dim = (int)in[0].shape[1], topk = (int)out[1].shape[0];
  if (e_dim > 64 || topk > e_dim) return 21;
  const int stride = e_dim + topk * e_dim;
  int blocks = (int)((m + PKF_LBL_THREADS - 1) / PKF_LBL_THREADS);
  if (blocks > PKF_LBL_BLOCKS) blocks = PKF_LBL_BLOCKS;
  const size_t bytes = sizeof(float) * (size_t)(PKF_LBL_BLOCKS * stride + 1 + topk * e_dim);
  PKF_CU(pkf_cu_reserve(&st->partial, &st->cap, bytes));
  float* packed = st->partial + PKF_LBL_BLOCKS * stride;
  pkf_lbl_route<<<blocks, PKF_LBL_THREADS, sizeof(int) * topk * e_dim, s>>>(in[0].data, dt, m, e_dim, topk, st->partial);
  pkf_lbl_pack<<<1, 256, 0, s>>>(st->partial, blocks, m, e_dim, topk, packed);
  PKF_CU(cudaGetLastError());
  if (ctx->world_size > 1)
    PKF_NCCL(ncclAllReduce(packed, packed, (size_t)(1 + topk * e_dim), ncclFloat32, ncclSum, (ncclComm_t)ctx->nccl, s));
  pkf_lbl_out<<<1, 256, 0, s>>>(packed, out[0].data, out[1].data, dt, ctx->world_size, m, topk * e_dim);
  PKF_CU(cudaGetLastError());
  return 0;
}
