// hyena_conv1d_halo cuda reference, as PyTorch does PKB's exchange
// (batch_isend_irecv of the contiguous chunk tails, then a grouped conv1d over
// the padded chunks) with the cat folded into the convolution kernel: one pack
// kernel copies the two tails [B, C, P] (a's to the next rank, b's to the
// previous rank) into a send buffer, one NCCL send/recv group exchanges them,
// and one depthwise convolution kernel (f32 accumulation) reads the chunk from
// x and the first P padded positions from the received halos (zeros on rank 0,
// its own a tail for b on the last rank). Written with the candidate ABI: it is
// also compiled as a candidate (ref_cuda_hyena_conv1d_halo.so).
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

typedef struct {
  void* buf;  // [send a tail | send b tail | recv prev a | recv next b], each [B, C, P]
  size_t cap;
} pkf_hy_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  ctx->user_state = calloc(1, sizeof(pkf_hy_state));
  return ctx->user_state == NULL;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  pkf_hy_state* st = (pkf_hy_state*)ctx->user_state;
  if (st == NULL) return;
  if (st->buf) cudaFree(st->buf);
  free(st);
}

// x [rows, 2L] -> send [2][rows][P]: the last P positions of chunk a, then of b.
__global__ void pkf_hy_pack(const void* x, void* send, pkf_dtype dt, int64_t rows, int64_t l, int64_t p) {
  const int64_t n = 2 * rows * p;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t ch = i / (rows * p), row = (i / p) % rows, q = i % p;
    pkf_dstore(send, dt, i, pkf_dload(x, dt, row * 2 * l + ch * l + (l - p) + q));
  }
}

// y[row, ch*L + t] = sum_k wgt[c, k] * padded_ch[t + k]; padded position
// g = t + k - P < 0 comes from halo_ch (NULL: zero), halo row stride `hs`.
__global__ void pkf_hy_conv(const void* x, const void* wgt, const void* halo_a, const void* halo_b, int64_t hs,
                            int64_t hoff_b, void* y, pkf_dtype dt, int64_t rows, int64_t c_n, int64_t l,
                            int64_t k_n) {
  const int64_t n = rows * 2 * l, p = k_n - 1;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = i / (2 * l), pos = i % (2 * l), ch = pos / l, t = pos % l, c = row % c_n;
    const void* halo = ch ? halo_b : halo_a;
    const int64_t hoff = ch ? hoff_b : 0;
    float acc = 0.0f;
    for (int64_t k = 0; k < k_n; ++k) {
      const int64_t g = t + k - p;
      float v = 0.0f;
      if (g >= 0) v = pkf_dload(x, dt, row * 2 * l + ch * l + g);
      else if (halo != NULL) v = pkf_dload(halo, dt, row * hs + hoff + p + g);
      acc += pkf_dload(wgt, dt, c * k_n + k) * v;
    }
    pkf_dstore(y, dt, i, acc);
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_hy_state* st = (pkf_hy_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int r = ctx->rank, w = ctx->world_size;
  const int64_t rows = in[0].shape[0] * in[0].shape[1], c_n = in[0].shape[1], l = in[0].shape[2] / 2;
  const int64_t k_n = in[1].shape[2], p = k_n - 1, es = pkf_cu_elem(dt), halo = rows * p;
  // The last rank's b halo is its own a tail: read x directly (row stride 2L, offset L-P).
  const void* own_a_tail = in[0].data;
  if (w == 1 || p == 0) {
    pkf_hy_conv<<<pkf_cu_blocks(rows * 2 * l), 256, 0, s>>>(in[0].data, in[1].data, NULL, own_a_tail, 2 * l,
                                                            l - p, out[0].data, dt, rows, c_n, l, k_n);
    PKF_CU(cudaGetLastError());
    return 0;
  }
  const size_t bytes = (size_t)(4 * halo * es);
  PKF_CU(pkf_cu_reserve(&st->buf, &st->cap, bytes));
  char* send_a = (char*)st->buf;
  char* send_b = send_a + halo * es;
  char* recv_a = send_b + halo * es;
  char* recv_b = recv_a + halo * es;
  pkf_hy_pack<<<pkf_cu_blocks(2 * halo), 256, 0, s>>>(in[0].data, send_a, dt, rows, l, p);
  PKF_CU(cudaGetLastError());
  const ncclComm_t comm = (ncclComm_t)ctx->nccl;
  const ncclDataType_t nt = pkf_nccl_type(dt);
  PKF_NCCL(ncclGroupStart());
  if (r > 0) {
    PKF_NCCL(ncclRecv(recv_a, (size_t)halo, nt, r - 1, comm, s));
    PKF_NCCL(ncclSend(send_b, (size_t)halo, nt, r - 1, comm, s));
  }
  if (r < w - 1) {
    PKF_NCCL(ncclRecv(recv_b, (size_t)halo, nt, r + 1, comm, s));
    PKF_NCCL(ncclSend(send_a, (size_t)halo, nt, r + 1, comm, s));
  }
  PKF_NCCL(ncclGroupEnd());
  // Received halos are [rows][P] (stride P); the last rank's b halo is its own
  // a tail, already packed in send_a.
  pkf_hy_conv<<<pkf_cu_blocks(rows * 2 * l), 256, 0, s>>>(in[0].data, in[1].data, r > 0 ? recv_a : NULL,
                                                          r == w - 1 ? send_a : recv_b,
                                                          p, 0, out[0].data, dt, rows, c_n, l, k_n);
  PKF_CU(cudaGetLastError());
  return 0;
}
