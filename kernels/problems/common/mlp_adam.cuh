// cuda reference shared by ddp, zero1 and zero2 (ParallelKernelBench 40-42),
// written as a strong PyTorch user with f32 master math writes it: NCCL
// broadcast of rank 0's flat parameters (ddp: and state), inputs converted
// to f32, forward and backward as five cuBLAS f32 GEMMs (no TF32) plus
// bias/ReLU/loss-gradient/column-sum kernels into one flat f32 gradient,
// then ddp: ncclAllReduce of the gradient and a fused Adam kernel over all
// of it; zero1: ncclAllReduce, Adam on this rank's shard, in-place
// ncclAllGather of the updated shards; zero2: ncclReduceScatter instead of
// the all-reduce. Gradients stay f32 end to end (AMP's master gradients).
#ifndef PKFORGE_PROBLEMS_COMMON_MLP_ADAM_CUH_
#define PKFORGE_PROBLEMS_COMMON_MLP_ADAM_CUH_

#include "cublas_util.cuh"

static __global__ void pkf_mlp_to_f32(const void* src, pkf_dtype dt, float* dst, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = pkf_dload(src, dt, i);
}
// h = relu(pre + b1), in place ([rows, hid]).
static __global__ void pkf_mlp_bias_relu(float* pre, const float* b1, int64_t hid, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    pre[i] = fmaxf(pre[i] + b1[i % hid], 0.0f);
}
// d loss / d out = (h W2^T + b2 - y) * 2 / (rows * dout), in place.
static __global__ void pkf_mlp_loss_grad(float* o, const float* b2, const void* y, pkf_dtype dt, int64_t dout,
                                         float scale, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    o[i] = (o[i] + b2[i % dout] - pkf_dload(y, dt, i)) * scale;
}
static __global__ void pkf_mlp_relu_mask(float* dh, const float* h, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    if (!(h[i] > 0.0f)) dh[i] = 0.0f;
}
// dst[c] = sum over rows of a[r, c].
static __global__ void pkf_mlp_colsum(const float* a, int64_t rows, int64_t cols, float* dst) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols; c += (int64_t)gridDim.x * blockDim.x) {
    float s = 0.0f;
    for (int64_t r = 0; r < rows; ++r) s += a[r * cols + c];
    dst[c] = s;
  }
}
// One Adam step (t = 4) on n elements: gradient g * gscale (the mean over ranks).
static __global__ void pkf_mlp_adam(const float* w, const float* g, float gscale, const void* m_in, const void* v_in,
                                    void* w_out, void* m_out, void* v_out, pkf_dtype dt, int64_t n) {
  const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  const float bc1 = 1.0f - b1 * b1 * b1 * b1, bc2 = 1.0f - b2 * b2 * b2 * b2;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float gi = g[i] * gscale;
    const float m = b1 * pkf_dload(m_in, dt, i) + (1.0f - b1) * gi;
    const float v = b2 * pkf_dload(v_in, dt, i) + (1.0f - b2) * gi * gi;
    pkf_dstore(w_out, dt, i, w[i] - lr * (m / bc1) / (sqrtf(v / bc2) + eps));
    pkf_dstore(m_out, dt, i, m);
    pkf_dstore(v_out, dt, i, v);
  }
}

// Row-major C[m, n] = op(A) op(B) in f32 (ld = row length of the stored matrix).
static inline int pkf_mlp_gemm(cublasHandle_t h, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                               int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  const float one = 1.0f, zero = 0.0f;
  const cublasStatus_t st =
      cublasGemmEx(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b,
                   CUDA_R_32F, (int)ldb, a, CUDA_R_32F, (int)lda, &zero, c, CUDA_R_32F, (int)ldc, CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT);
  return st == CUBLAS_STATUS_SUCCESS ? 0 : 102;
}

// kind: 0 ddp, 1 zero1, 2 zero2.
static int pkf_mlp_adam_cuda(pkf_context* ctx, const pkf_tensor* in, pkf_tensor* out, cudaStream_t s, int kind) {
  pkf_gemm_state* st = (pkf_gemm_state*)ctx->user_state;
  const pkf_dtype dt = out[0].dtype;
  const int world = ctx->world_size, rank = ctx->rank;
  const int64_t rows = in[0].shape[0], din = in[0].shape[1], dout = in[1].shape[1];
  const int64_t p = out[0].shape[0], hid = (p - dout) / (din + 1 + dout), es = pkf_cu_elem(dt);
  const int64_t part = out[1].shape[0], off = kind == 0 ? 0 : rank * part;
  const ncclComm_t comm = (ncclComm_t)ctx->nccl;
  // Broadcast rank 0's parameters (flattened W1|b1|W2|b2) into params.
  char* flat = (char*)out[0].data;
  if (rank == 0) {
    const int64_t n[4] = {hid * din, hid, dout * hid, dout};
    int64_t at = 0;
    for (int i = 0; i < 4; ++i) {
      PKF_CU(cudaMemcpyAsync(flat + at * es, in[2 + i].data, (size_t)(n[i] * es), cudaMemcpyDeviceToDevice, s));
      at += n[i];
    }
  }
  if (world > 1) {
    PKF_NCCL(ncclGroupStart());
    PKF_NCCL(ncclBroadcast(flat, flat, (size_t)p, pkf_nccl_type(dt), 0, comm, s));
    if (kind == 0) {  // ddp: the state is rank 0's too
      PKF_NCCL(ncclBroadcast(rank == 0 ? in[6].data : out[1].data, out[1].data, (size_t)p, pkf_nccl_type(dt), 0,
                             comm, s));
      PKF_NCCL(ncclBroadcast(rank == 0 ? in[7].data : out[2].data, out[2].data, (size_t)p, pkf_nccl_type(dt), 0,
                             comm, s));
    }
    PKF_NCCL(ncclGroupEnd());
  } else if (kind == 0) {
    PKF_CU(cudaMemcpyAsync(out[1].data, in[6].data, (size_t)(p * es), cudaMemcpyDeviceToDevice, s));
    PKF_CU(cudaMemcpyAsync(out[2].data, in[7].data, (size_t)(p * es), cudaMemcpyDeviceToDevice, s));
  }
  // f32 workspace: X, params, h, d out, d h, gradient, gradient shard.
  const size_t floats = (size_t)(rows * din + p + 2 * rows * hid + rows * dout + p + part);
  float* ws = (float*)pkf_gemm_buffer(st, 0, floats * sizeof(float));
  if (ws == NULL) return 103;
  float* xf = ws;
  float* pf = xf + rows * din;
  float* hb = pf + p;
  float* dh = hb + rows * hid;
  float* db = dh + rows * hid;
  float* grad = db + rows * dout;
  float* gpart = grad + p;
  float* w1 = pf;
  float* b1 = w1 + hid * din;
  float* w2 = b1 + hid;
  float* b2 = w2 + dout * hid;
  float* g_w1 = grad;
  float* g_b1 = g_w1 + hid * din;
  float* g_w2 = g_b1 + hid;
  float* g_b2 = g_w2 + dout * hid;
  pkf_mlp_to_f32<<<pkf_cu_blocks(rows * din), 256, 0, s>>>(in[0].data, dt, xf, rows * din);
  pkf_mlp_to_f32<<<pkf_cu_blocks(p), 256, 0, s>>>(flat, dt, pf, p);
  cublasHandle_t h = st->handle;
  if (cublasSetStream(h, s) != CUBLAS_STATUS_SUCCESS) return 104;
  int rc;
  if ((rc = pkf_mlp_gemm(h, false, true, rows, hid, din, xf, din, w1, din, hb, hid)) != 0) return rc;
  pkf_mlp_bias_relu<<<pkf_cu_blocks(rows * hid), 256, 0, s>>>(hb, b1, hid, rows * hid);
  if ((rc = pkf_mlp_gemm(h, false, true, rows, dout, hid, hb, hid, w2, hid, db, dout)) != 0) return rc;
  pkf_mlp_loss_grad<<<pkf_cu_blocks(rows * dout), 256, 0, s>>>(db, b2, in[1].data, dt, dout,
                                                                2.0f / (float)(rows * dout), rows * dout);
  if ((rc = pkf_mlp_gemm(h, true, false, dout, hid, rows, db, dout, hb, hid, g_w2, hid)) != 0) return rc;
  pkf_mlp_colsum<<<pkf_cu_blocks(dout), 256, 0, s>>>(db, rows, dout, g_b2);
  if ((rc = pkf_mlp_gemm(h, false, false, rows, hid, dout, db, dout, w2, hid, dh, hid)) != 0) return rc;
  pkf_mlp_relu_mask<<<pkf_cu_blocks(rows * hid), 256, 0, s>>>(dh, hb, rows * hid);
  pkf_mlp_colsum<<<pkf_cu_blocks(hid), 256, 0, s>>>(dh, rows, hid, g_b1);
  if ((rc = pkf_mlp_gemm(h, true, false, hid, din, rows, dh, hid, xf, din, g_w1, din)) != 0) return rc;
  PKF_CU(cudaGetLastError());
  // Sum the gradient over ranks (the 1/world of the mean is folded into Adam).
  const float* g = grad + off;
  if (world > 1) {
    if (kind == 2) {
      PKF_NCCL(ncclReduceScatter(grad, gpart, (size_t)part, ncclFloat32, ncclSum, comm, s));
      g = gpart;
    } else {
      PKF_NCCL(ncclAllReduce(grad, grad, (size_t)p, ncclFloat32, ncclSum, comm, s));
    }
  }
  char* mine = flat + off * es;
  const void* m_in = kind == 0 ? out[1].data : in[6].data;
  const void* v_in = kind == 0 ? out[2].data : in[7].data;
  pkf_mlp_adam<<<pkf_cu_blocks(part), 256, 0, s>>>(pf + off, g, 1.0f / (float)world, m_in, v_in, mine, out[1].data,
                                                   out[2].data, dt, part);
  PKF_CU(cudaGetLastError());
  if (kind != 0 && world > 1)
    PKF_NCCL(ncclAllGather(mine, flat, (size_t)part, pkf_nccl_type(dt), comm, s));
  return 0;
}

#endif  // PKFORGE_PROBLEMS_COMMON_MLP_ADAM_CUH_
