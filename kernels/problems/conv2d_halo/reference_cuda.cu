// conv2d_halo cuda reference, the way one writes it without cuDNN: the
// boundary rows are packed ([C, W] per side) and exchanged with the
// neighbours in one NCCL send/recv group, an im2col kernel builds
// cols [9C, HL*W] from x and the two halos (zeros at the image border), y is
// pre-filled with the bias and one cublasGemmEx computes
// y [C, HL*W] += weight [C, 9C] @ cols (f32 compute, rounded once). Written
// with the candidate ABI: it is also compiled as a candidate
// (ref_cuda_conv2d_halo.so).
#include "pkforge/candidate.h"
#include "../common/cublas_util.cuh"

extern "C" int pkf_setup(pkf_context* ctx) { return pkf_gemm_setup(ctx); }
extern "C" void pkf_teardown(pkf_context* ctx) { pkf_gemm_teardown(ctx); }

// send [2][C][W]: row 0 (to the upper rank) and row HL-1 (to the lower rank)
// of every channel, in units of T.
template <typename T>
__global__ void pkf_conv_pack(const T* x, T* send, int64_t c_dim, int64_t hl, int64_t wd) {
  const int64_t n = 2 * c_dim * wd;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t side = i / (c_dim * wd), rest = i % (c_dim * wd), c = rest / wd, w = rest % wd;
    send[i] = x[(c * hl + (side == 0 ? 0 : hl - 1)) * wd + w];
  }
}

// cols[(c*9 + kh*3 + kw), h*W + w] = X[c, h + kh - 1, w + kw - 1]; halo [2][C][W]
// holds the upper neighbour's last rows (0) and the lower one's first rows (1).
template <typename T>
__global__ void pkf_conv_im2col(const T* x, const T* halo, T* cols, int64_t c_dim, int64_t hl,
                                int64_t wd, int has_up, int has_down) {
  const int64_t hw = hl * wd, n = 9 * c_dim * hw;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t k = i / hw, p = i % hw, c = k / 9, kh = (k % 9) / 3, kw = k % 3;
    const int64_t row = p / wd + kh - 1, col = p % wd + kw - 1;
    T v = T(0);
    if (col >= 0 && col < wd) {
      if (row < 0) {
        if (has_up) v = halo[c * wd + col];
      } else if (row >= hl) {
        if (has_down) v = halo[(c_dim + c) * wd + col];
      } else {
        v = x[(c * hl + row) * wd + col];
      }
    }
    cols[i] = v;
  }
}

template <typename T>
__global__ void pkf_conv_bias(const T* bias, T* y, int64_t c_dim, int64_t hw) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < c_dim * hw; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = bias[i / hw];
}

template <typename T>
static int pkf_conv_kernels(const pkf_tensor* in, pkf_tensor* out, void* send, void* halo, void* cols,
                            int phase, int has_up, int has_down, cudaStream_t s) {
  const int64_t c_dim = in[0].shape[1], hl = in[0].shape[2], wd = in[0].shape[3];
  if (phase == 0) {
    pkf_conv_pack<<<pkf_cu_blocks(2 * c_dim * wd), 256, 0, s>>>((const T*)in[0].data, (T*)send, c_dim, hl, wd);
  } else {
    pkf_conv_im2col<<<pkf_cu_blocks(9 * c_dim * hl * wd), 256, 0, s>>>(
        (const T*)in[0].data, (const T*)halo, (T*)cols, c_dim, hl, wd, has_up, has_down);
    pkf_conv_bias<<<pkf_cu_blocks(c_dim * hl * wd), 256, 0, s>>>((const T*)in[2].data, (T*)out[0].data,
                                                                  c_dim, hl * wd);
  }
  PKF_CU(cudaGetLastError());
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_gemm_state* st = (pkf_gemm_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int r = ctx->rank, w = ctx->world_size;
  const int64_t c_dim = in[0].shape[1], hl = in[0].shape[2], wd = in[0].shape[3];
  const int64_t es = pkf_cu_elem(dt), row_elems = c_dim * wd;
  // buffer 0: send [2][C][W] then halo [2][C][W]; buffer 1: cols [9C][HL*W].
  char* edge = (char*)pkf_gemm_buffer(st, 0, (size_t)(4 * row_elems * es));
  void* cols = pkf_gemm_buffer(st, 1, (size_t)(9 * c_dim * hl * wd * es));
  if (edge == NULL || cols == NULL) return 103;
  char* send = edge;
  char* halo = edge + 2 * row_elems * es;
  const int has_up = r > 0, has_down = r < w - 1;
  int rc = es == 4 ? pkf_conv_kernels<float>(in, out, send, halo, cols, 0, has_up, has_down, s)
                   : pkf_conv_kernels<uint16_t>(in, out, send, halo, cols, 0, has_up, has_down, s);
  if (rc != 0) return rc;
  if (w > 1) {
    const ncclDataType_t t = pkf_nccl_type(dt);
    ncclComm_t comm = (ncclComm_t)ctx->nccl;
    PKF_NCCL(ncclGroupStart());
    if (has_up) {  // my first rows up; its last rows into halo[0]
      PKF_NCCL(ncclSend(send, (size_t)row_elems, t, r - 1, comm, s));
      PKF_NCCL(ncclRecv(halo, (size_t)row_elems, t, r - 1, comm, s));
    }
    if (has_down) {  // my last rows down; its first rows into halo[1]
      PKF_NCCL(ncclSend(send + row_elems * es, (size_t)row_elems, t, r + 1, comm, s));
      PKF_NCCL(ncclRecv(halo + row_elems * es, (size_t)row_elems, t, r + 1, comm, s));
    }
    PKF_NCCL(ncclGroupEnd());
  }
  rc = es == 4 ? pkf_conv_kernels<float>(in, out, send, halo, cols, 1, has_up, has_down, s)
               : pkf_conv_kernels<uint16_t>(in, out, send, halo, cols, 1, has_up, has_down, s);
  if (rc != 0) return rc;
  if (cublasSetStream(st->handle, s) != CUBLAS_STATUS_SUCCESS) return 104;
  // y [C, HL*W] = weight [C, 9C] @ cols [9C, HL*W] + y (the bias).
  return pkf_gemm_rowmajor(st->handle, dt, c_dim, hl * wd, 9 * c_dim, in[1].data, 9 * c_dim, cols, hl * wd,
                           out[0].data, hl * wd, 1.0f);
}
