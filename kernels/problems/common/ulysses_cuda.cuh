// cuda reference shared by the three Ulysses layout problems
// (ulysses_gather_heads_scatter_seq, ulysses_gather_seq_scatter_heads,
// ulysses_gather_seq_scatter_heads_qkv), as PyTorch does them (tensor_split +
// contiguous, one all_to_all, cat): a pack kernel puts the chunk for rank j at
// slot j of a send buffer, one NCCL group of send/recv pairs, an unpack kernel
// concatenates the received chunks into y. Both copies are a swap of the two
// outer dimensions of a [P][Q][C] view; the problems differ only in the view
// sizes, which each reference computes from its input shape and passes to
// pkf_uly_all_to_all. One staging buffer (send, then receive) per rank,
// grown on demand and freed at teardown.
#ifndef PKFORGE_PROBLEMS_COMMON_ULYSSES_CUDA_CUH_
#define PKFORGE_PROBLEMS_COMMON_ULYSSES_CUDA_CUH_

#include "cuda_util.cuh"

typedef struct {
  void* buf;  // send, then receive staging
  size_t cap;
} pkf_uly_state;

static inline int pkf_uly_setup(pkf_context* ctx) {
  ctx->user_state = calloc(1, sizeof(pkf_uly_state));
  return ctx->user_state == NULL;
}
static inline void pkf_uly_teardown(pkf_context* ctx) {
  pkf_uly_state* st = (pkf_uly_state*)ctx->user_state;
  if (st == NULL) return;
  if (st->buf) cudaFree(st->buf);
  free(st);
}

// dst [Q][P][C] <- src [P][Q][C], in units of T.
template <typename T>
__global__ void pkf_uly_swap01(const T* src, T* dst, int64_t p, int64_t q, int64_t c) {
  const int64_t total = p * q * c;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t qi = i / (p * c), pi = (i / c) % p, ci = i % c;
    dst[i] = src[(pi * q + qi) * c + ci];
  }
}

static int pkf_uly_swap(const void* src, void* dst, int64_t es, int64_t p, int64_t q, int64_t c, cudaStream_t s) {
  const int blocks = pkf_cu_blocks(p * q * c);
  if (es == 4)
    pkf_uly_swap01<<<blocks, 256, 0, s>>>((const float*)src, (float*)dst, p, q, c);
  else
    pkf_uly_swap01<<<blocks, 256, 0, s>>>((const uint16_t*)src, (uint16_t*)dst, p, q, c);
  PKF_CU(cudaGetLastError());
  return 0;
}

// y = unpack(all_to_all(pack(x))): pack is the swap of a [pack_p][w][pack_c]
// view of x, unpack the swap of a [w][unpack_q][unpack_c] view of what rank
// j sent (chunk j of the receive buffer). World 1 is a copy (the permutation
// is the identity).
static int pkf_uly_all_to_all(pkf_context* ctx, const pkf_tensor* x, pkf_tensor* y, cudaStream_t s,
                              int64_t pack_p, int64_t pack_c, int64_t unpack_q, int64_t unpack_c) {
  pkf_uly_state* st = (pkf_uly_state*)ctx->user_state;
  const int64_t w = ctx->world_size, es = pkf_cu_elem(x->dtype);
  const int64_t n = pkf_cu_numel(x);
  if (w == 1) {  // the permutation is the identity
    PKF_CU(cudaMemcpyAsync(y->data, x->data, (size_t)(n * es), cudaMemcpyDeviceToDevice, s));
    return 0;
  }
  const size_t bytes = (size_t)(2 * n * es);
  PKF_CU(pkf_cu_reserve(&st->buf, &st->cap, bytes));
  char* send = (char*)st->buf;
  char* recv = send + n * es;
  int rc = pkf_uly_swap(x->data, send, es, pack_p, w, pack_c, s);
  if (rc != 0) return rc;
  const size_t chunk = (size_t)(n / w);
  const ncclDataType_t t = pkf_nccl_type(x->dtype);
  ncclComm_t comm = (ncclComm_t)ctx->nccl;
  PKF_NCCL(ncclGroupStart());
  for (int j = 0; j < (int)w; ++j) {
    PKF_NCCL(ncclSend(send + j * chunk * es, chunk, t, j, comm, s));
    PKF_NCCL(ncclRecv(recv + j * chunk * es, chunk, t, j, comm, s));
  }
  PKF_NCCL(ncclGroupEnd());
  return pkf_uly_swap(recv, y->data, es, w, unpack_q, unpack_c, s);
}

#endif  // PKFORGE_PROBLEMS_COMMON_ULYSSES_CUDA_CUH_
