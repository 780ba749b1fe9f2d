// Device-side element helpers shared by the cuda references and naive cuda
// solutions (CUDA/NCCL and standard headers only, like host_math.h, so a file
// that includes it still compiles from the problem folder alone).
// f16/bf16 arithmetic is done in f32 (accumulate in f32, round once when
// storing, round-to-nearest-even like the host oracle).
#ifndef PKFORGE_PROBLEMS_COMMON_CUDA_UTIL_CUH_
#define PKFORGE_PROBLEMS_COMMON_CUDA_UTIL_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pkforge/candidate.h"

static __device__ __forceinline__ float pkf_dload(const void* p, pkf_dtype dt, int64_t i) {
  if (dt == PKF_F32) return ((const float*)p)[i];
  if (dt == PKF_F16) return __half2float(((const __half*)p)[i]);
  return __bfloat162float(((const __nv_bfloat16*)p)[i]);
}
static __device__ __forceinline__ void pkf_dstore(void* p, pkf_dtype dt, int64_t i, float v) {
  if (dt == PKF_F32) ((float*)p)[i] = v;
  else if (dt == PKF_F16) ((__half*)p)[i] = __float2half_rn(v);
  else ((__nv_bfloat16*)p)[i] = __float2bfloat16_rn(v);
}

static inline int64_t pkf_cu_numel(const pkf_tensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}
static inline int64_t pkf_cu_elem(pkf_dtype dt) {
  switch (dt) {
    case PKF_F32: case PKF_I32: return 4;
    case PKF_I64: case PKF_F64: return 8;
    case PKF_U8: case PKF_FP8_E4M3: return 1;
    default: return 2;
  }
}
static inline ncclDataType_t pkf_nccl_type(pkf_dtype dt) {
  switch (dt) {
    case PKF_F32: return ncclFloat32;
    case PKF_F16: return ncclFloat16;
    case PKF_I32: return ncclInt32;
    case PKF_I64: return ncclInt64;
    case PKF_F64: return ncclFloat64;
    case PKF_U8: return ncclUint8;
    default: return ncclBfloat16;
  }
}
static inline int pkf_cu_blocks(int64_t n) {
  int64_t b = (n + 255) / 256;
  return (int)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

#define PKF_CU(x)                    \
  do {                               \
    if ((x) != cudaSuccess) return 100; \
  } while (0)
#define PKF_NCCL(x)                  \
  do {                               \
    if ((x) != ncclSuccess) return 101; \
  } while (0)

// The sum of v over a block of 256 threads (blockDim.x a power of two up to
// 256), a fixed-order tree in shared memory; every thread gets it. Called by
// every thread of the block; a second call in the same kernel needs a
// __syncthreads() first (the shared buffer is reused).
static __device__ __forceinline__ float pkf_cu_block_sum(float v) {
  __shared__ float part[256];
  part[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  return part[0];
}

// gathered [w][rows][n] -> y [rows][w*n]: what an all-gather or all-to-all
// stacked by rank, concatenated along the last dimension (PyTorch's cat(dim=1)
// after all_gather), in units of T (2 or 4 bytes).
template <typename T>
static __global__ void pkf_cu_cat_ranks_kernel(const T* gathered, T* y, int w, int64_t rows, int64_t n) {
  const int64_t total = rows * w * n;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t m = i / (w * n), rest = i % (w * n), j = rest / n, c = rest % n;
    y[i] = gathered[(j * rows + m) * n + c];
  }
}
// Launches it on s for elements of es bytes (4: f32, else 2: f16/bf16).
static inline int pkf_cu_cat_ranks(const void* gathered, void* y, int64_t es, int w, int64_t rows, int64_t n,
                                   cudaStream_t s) {
  const int blocks = pkf_cu_blocks(rows * w * n);
  if (es == 4)
    pkf_cu_cat_ranks_kernel<<<blocks, 256, 0, s>>>((const float*)gathered, (float*)y, w, rows, n);
  else
    pkf_cu_cat_ranks_kernel<<<blocks, 256, 0, s>>>((const uint16_t*)gathered, (uint16_t*)y, w, rows, n);
  PKF_CU(cudaGetLastError());
  return 0;
}

// Grows a device buffer to at least `bytes` (its contents are not kept): the
// old one is freed first, so a failed allocation leaves it empty ({NULL, 0}).
// Use as PKF_CU(pkf_cu_reserve(&st->buf, &st->cap, bytes)).
template <typename T>
static inline cudaError_t pkf_cu_reserve(T** buf, size_t* cap, size_t bytes) {
  if (*cap >= bytes) return cudaSuccess;
  if (*buf) cudaFree(*buf);
  *buf = NULL;
  *cap = 0;
  const cudaError_t e = cudaMalloc((void**)buf, bytes);
  if (e == cudaSuccess) *cap = bytes;
  return e;
}

// Naive exchange for simple solutions: every rank copies its inputs into its
// own symmetric scratch (after a small header of offsets), synchronizes and
// meets its peers at the host barrier; peer_in[j][i] is then a device pointer
// to rank j's input i (read through the peer mapping). Call ctx->barrier once
// more (after synchronizing the stream) before returning, so no rank
// overwrites its scratch while a peer still reads it.
typedef struct {
  int64_t n_in;
  int64_t offset[8];
} pkf_cu_header;

static inline int pkf_cu_publish_inputs(const pkf_context* ctx, const pkf_tensor* in, int32_t n_in,
                                        const void* peer_in[][8], cudaStream_t s) {
  if (n_in > 8) return 1;
  char* mine = (char*)ctx->peer_scratch[ctx->rank];
  pkf_cu_header hdr;
  memset(&hdr, 0, sizeof hdr);
  hdr.n_in = n_in;
  int64_t off = 256;
  for (int32_t i = 0; i < n_in; ++i) {
    const int64_t b = pkf_cu_numel(&in[i]) * pkf_cu_elem(in[i].dtype);
    if ((uint64_t)(off + b) > ctx->scratch_bytes) return 2;
    PKF_CU(cudaMemcpyAsync(mine + off, in[i].data, (size_t)b, cudaMemcpyDeviceToDevice, s));
    hdr.offset[i] = off;
    off += (b + 255) / 256 * 256;
  }
  PKF_CU(cudaMemcpyAsync(mine, &hdr, sizeof hdr, cudaMemcpyHostToDevice, s));
  PKF_CU(cudaStreamSynchronize(s));
  if (ctx->barrier(ctx) != 0) return 3;
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    const char* peer = (const char*)ctx->peer_scratch[j];
    pkf_cu_header ph;
    PKF_CU(cudaMemcpy(&ph, peer, sizeof ph, cudaMemcpyDeviceToHost));
    for (int64_t i = 0; i < ph.n_in && i < 8; ++i) peer_in[j][i] = peer + ph.offset[i];
  }
  return 0;
}

// Up to 64 peer pointers of one input, passed to kernels by value.
typedef struct {
  const void* p[64];
} pkf_cu_peers;

static inline pkf_cu_peers pkf_cu_peer_input(const pkf_context* ctx, const void* peer_in[][8], int i) {
  pkf_cu_peers r;
  memset(&r, 0, sizeof r);
  for (int32_t j = 0; j < ctx->world_size && j < 64; ++j) r.p[j] = peer_in[j][i];
  return r;
}

// Finishes a naive call: wait for the stream, then for every peer.
static inline int pkf_cu_finish(const pkf_context* ctx, cudaStream_t s) {
  PKF_CU(cudaGetLastError());
  PKF_CU(cudaStreamSynchronize(s));
  return ctx->barrier(ctx);
}

#endif  // PKFORGE_PROBLEMS_COMMON_CUDA_UTIL_CUH_
