// moe_token_preprocess cuda reference, as Megatron's preprocess does it in
// PyTorch (PKB 26's reference) with its small reductions fused: one histogram
// kernel (per-block shared counts, then global atomics) gives this rank's
// tokens per expert, one ncclAllGather gathers every rank's [E] counts, one
// kernel derives the splits and the per-local-expert counts from them (the
// outputs stay on the device: no host read-back is needed). World 1: the
// gather is skipped. Written with the candidate ABI: it is also compiled as a
// candidate.
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

typedef struct {
  unsigned long long* counts;  // [world][E]
  int64_t cap;
} prep_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  prep_state* s = (prep_state*)calloc(1, sizeof(prep_state));
  if (s == NULL) return 1;
  ctx->user_state = s;
  return 0;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  prep_state* s = (prep_state*)ctx->user_state;
  if (s == NULL) return;
  cudaFree(s->counts);
  free(s);
  ctx->user_state = NULL;
}

__global__ void prep_hist(const long long* sel, int64_t n, int e, unsigned long long* counts) {
  extern __shared__ unsigned int h[];
  for (int x = threadIdx.x; x < e; x += blockDim.x) h[x] = 0;
  __syncthreads();
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x)
    atomicAdd(&h[sel[k]], 1u);
  __syncthreads();
  for (int x = threadIdx.x; x < e; x += blockDim.x)
    if (h[x]) atomicAdd(&counts[x], (unsigned long long)h[x]);
}

// counts [w][E] -> the four outputs of rank r; one thread per (j, l) entry.
__global__ void prep_outputs(const unsigned long long* counts, int w, int r, int el, long long* in_splits,
                             long long* out_splits, long long* per_local, long long* sum_local) {
  const int e = w * el;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < w) {
    long long a = 0, b = 0;
    for (int l = 0; l < el; ++l) {
      a += (long long)counts[r * e + t * el + l];
      b += (long long)counts[t * e + r * el + l];
    }
    in_splits[t] = a;
    out_splits[t] = b;
  }
  if (t < w * el) per_local[t] = (long long)counts[(t / el) * e + r * el + t % el];
  if (t < el) {
    long long s = 0;
    for (int i = 0; i < w; ++i) s += (long long)counts[i * e + r * el + t];
    sum_local[t] = s;
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  prep_state* st = (prep_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const int w = ctx->world_size, r = ctx->rank;
  const int64_t n = in[0].shape[0] * in[0].shape[1];
  const int el = (int)out[3].shape[0], e = el * w;
  if (st->cap < (int64_t)w * e) {
    cudaFree(st->counts);
    st->counts = NULL;
    st->cap = 0;
    PKF_CU(cudaMalloc(&st->counts, (size_t)w * e * sizeof(unsigned long long)));
    st->cap = (int64_t)w * e;
  }
  unsigned long long* mine = st->counts + (size_t)r * e;
  PKF_CU(cudaMemsetAsync(mine, 0, (size_t)e * sizeof(unsigned long long), s));
  int blocks = (int)((n + 255) / 256);
  if (blocks > 1024) blocks = 1024;
  if (blocks < 1) blocks = 1;
  prep_hist<<<blocks, 256, (size_t)e * sizeof(unsigned int), s>>>((const long long*)in[0].data, n, e, mine);
  PKF_CU(cudaGetLastError());
  if (w > 1)
    PKF_NCCL(ncclAllGather(mine, st->counts, (size_t)e, ncclUint64, (ncclComm_t)ctx->nccl, s));
  const int entries = w * el > w ? w * el : w;
  prep_outputs<<<(entries + 255) / 256, 256, 0, s>>>(st->counts, w, r, el, (long long*)out[0].data,
                                                     (long long*)out[1].data, (long long*)out[2].data,
                                                     (long long*)out[3].data);
  PKF_CU(cudaGetLastError());
  return 0;
}
