// cuda reference pieces shared by clip_grad_norm and clip_grad_norm_ep (as
// PyTorch's clip_grad_norm_ does it: foreach norms in f32, one all-reduce):
// each reference's own kernel writes per-block f32 sums of squares
// (at most PKF_CLIP_BLOCKS blocks of 256 threads, summed with
// pkf_cu_block_sum), then pkf_clip_reduce adds the partials in one block in
// a fixed order (deterministic) into slot PKF_CLIP_BLOCKS and all-reduces that
// one f32; the scale kernel reads it on device (no host round trip).
#ifndef PKFORGE_PROBLEMS_COMMON_CLIP_NORM_CUH_
#define PKFORGE_PROBLEMS_COMMON_CLIP_NORM_CUH_

#include "cuda_util.cuh"

#define PKF_CLIP_BLOCKS 1024

typedef struct {
  float* partial;  // [PKF_CLIP_BLOCKS + 1]: partials, then the sum of squares
} pkf_clip_state;

static inline int pkf_clip_setup(pkf_context* ctx) {
  pkf_clip_state* st = (pkf_clip_state*)calloc(1, sizeof(pkf_clip_state));
  if (st == NULL) return 1;
  ctx->user_state = st;
  PKF_CU(cudaMalloc(&st->partial, (PKF_CLIP_BLOCKS + 1) * sizeof(float)));
  return 0;
}
static inline void pkf_clip_teardown(pkf_context* ctx) {
  pkf_clip_state* st = (pkf_clip_state*)ctx->user_state;
  if (st == NULL) return;
  if (st->partial) cudaFree(st->partial);
  free(st);
}

static __global__ void pkf_clip_total(float* partial, int blocks) {
  float acc = 0.0f;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) acc += partial[b];
  const float s = pkf_cu_block_sum(acc);
  if (threadIdx.x == 0) partial[PKF_CLIP_BLOCKS] = s;
}

// Blocks of the sum-of-squares kernel for n elements (one partial each).
static inline int pkf_clip_blocks(int64_t n) {
  int blocks = pkf_cu_blocks(n);
  if (blocks > PKF_CLIP_BLOCKS) blocks = PKF_CLIP_BLOCKS;
  return blocks;
}

// After the sum-of-squares kernel: the partials of `blocks` blocks added into
// the sum of squares, then (when all_reduce) summed over the ranks in place.
// Returns the device address of the global sum of squares in *ss.
static inline int pkf_clip_reduce(pkf_context* ctx, pkf_clip_state* st, int blocks, int all_reduce,
                                  cudaStream_t s, float** ss) {
  pkf_clip_total<<<1, 256, 0, s>>>(st->partial, blocks);
  PKF_CU(cudaGetLastError());
  *ss = st->partial + PKF_CLIP_BLOCKS;
  if (all_reduce) PKF_NCCL(ncclAllReduce(*ss, *ss, 1, ncclFloat32, ncclSum, (ncclComm_t)ctx->nccl, s));
  return 0;
}

#endif  // PKFORGE_PROBLEMS_COMMON_CLIP_NORM_CUH_
