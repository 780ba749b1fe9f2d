// ulysses_gather_seq_scatter_heads_qkv cuda reference, as PyTorch does it (tensor_split + contiguous, one
// all_to_all, cat): a pack kernel puts the chunk for rank j at slot j of a send
// buffer, one NCCL group of send/recv pairs, an unpack kernel concatenates the
// received chunks into y. Both copies are a swap of the two outer dimensions
// of a [P][Q][C] view. Written with the candidate ABI: it is also compiled as a
// candidate (ref_cuda_ulysses_gather_seq_scatter_heads_qkv.so).
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

typedef struct {
  void* buf;  // send, then receive staging
  size_t cap;
} pkf_uly_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  ctx->user_state = calloc(1, sizeof(pkf_uly_state));
  return ctx->user_state == NULL;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
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

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_uly_state* st = (pkf_uly_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const int64_t w = ctx->world_size, es = pkf_cu_elem(in[0].dtype);
  const int64_t n = pkf_cu_numel(&in[0]);
  if (w == 1) {  // the permutation is the identity
    PKF_CU(cudaMemcpyAsync(out[0].data, in[0].data, (size_t)(n * es), cudaMemcpyDeviceToDevice, s));
    return 0;
  }
  const size_t bytes = (size_t)(2 * n * es);
  if (st->cap < bytes) {
    if (st->buf) cudaFree(st->buf);
    st->buf = NULL;
    st->cap = 0;
    PKF_CU(cudaMalloc(&st->buf, bytes));
    st->cap = bytes;
  }
  char* send = (char*)st->buf;
  char* recv = send + n * es;
  // x [B*T*3][w][C] -> send [w][B*T*3][C]; recv [w][B][T*3*C] -> y [B][w][T*3*C].
  const int64_t bb = in[0].shape[0], t_in = in[0].shape[1], c = in[0].shape[2] / 3 / w;
  const int64_t pack_p = bb * t_in * 3, pack_c = c, unpack_q = bb, unpack_c = t_in * 3 * c;
  int rc = pkf_uly_swap(in[0].data, send, es, pack_p, w, pack_c, s);
  if (rc != 0) return rc;
  const size_t chunk = (size_t)(n / w);
  const ncclDataType_t t = pkf_nccl_type(in[0].dtype);
  ncclComm_t comm = (ncclComm_t)ctx->nccl;
  PKF_NCCL(ncclGroupStart());
  for (int j = 0; j < (int)w; ++j) {
    PKF_NCCL(ncclSend(send + j * chunk * es, chunk, t, j, comm, s));
    PKF_NCCL(ncclRecv(recv + j * chunk * es, chunk, t, j, comm, s));
  }
  PKF_NCCL(ncclGroupEnd());
  return pkf_uly_swap(recv, out[0].data, es, w, unpack_q, unpack_c, s);
}
