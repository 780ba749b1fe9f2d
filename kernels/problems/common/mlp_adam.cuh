// cuda reference shared by ddp, zero1 and zero2 (ParallelKernelBench 40-42),
// written as a strong PyTorch user with f32 master math writes it: NCCL
// broadcast of rank 0's parameters straight into the flat params (ddp: and
// the state), bf16 inputs converted to f32 in one launch (f32 ones read in
// place), forward and backward as five cuBLAS f32 GEMMs (no TF32) plus
// bias/ReLU/loss-gradient kernels and two parallel column sums (the bias
// gradients, the second fused with the ReLU's backward) into one flat f32
// gradient, then ddp: ncclAllReduce of the gradient and a fused Adam kernel
// over all of it; zero1: ncclAllReduce, Adam on this rank's shard, in-place
// ncclAllGather of the updated shards; zero2: ncclReduceScatter instead of
// the all-reduce. Gradients stay f32 end to end (AMP's master gradients).
#ifndef PKFORGE_PROBLEMS_COMMON_MLP_ADAM_CUH_
#define PKFORGE_PROBLEMS_COMMON_MLP_ADAM_CUH_

#include "cublas_util.cuh"

// Up to five segments (lengths n[0..k)) converted to f32 into one contiguous
// destination: the inputs the GEMMs read, in one launch.
typedef struct {
  const void* src[5];
  int64_t n[5];
  int k;
} pkf_mlp_segments;
static __global__ void pkf_mlp_to_f32(pkf_mlp_segments seg, pkf_dtype dt, float* dst, int64_t total) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t at = i;
    int j = 0;
    while (j + 1 < seg.k && at >= seg.n[j]) at -= seg.n[j++];
    dst[i] = pkf_dload(seg.src[j], dt, at);
  }
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
// dst[c] = sum over rows of a[r, c], as torch's sum(dim=0) does it: a block
// of 32 x 32 threads per 32 columns, each thread a strided share of the rows
// (coalesced loads), then a tree in shared memory. mask != NULL: a[r, c] is
// first zeroed where !(mask[r, c] > 0) and written back (the ReLU's backward,
// fused with the bias gradient). Launch: grid ceil(cols / 32), block (32, 32).
static __global__ void pkf_mlp_colsum(float* a, const float* mask, int64_t rows, int64_t cols, float* dst) {
  __shared__ float part[32][33];
  const int64_t c = blockIdx.x * 32 + threadIdx.x;
  float s = 0.0f;
  if (c < cols)
    for (int64_t r = threadIdx.y; r < rows; r += 32) {
      float v = a[r * cols + c];
      if (mask != NULL && !(mask[r * cols + c] > 0.0f)) {
        v = 0.0f;
        a[r * cols + c] = 0.0f;
      }
      s += v;
    }
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  for (int w = 16; w > 0; w >>= 1) {
    if (threadIdx.y < w) part[threadIdx.y][threadIdx.x] += part[threadIdx.y + w][threadIdx.x];
    __syncthreads();
  }
  if (threadIdx.y == 0 && c < cols) dst[c] = part[0][threadIdx.x];
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

// kind: 0 ddp, 1 zero1, 2 zero2. Besides the collectives (the broadcasts in
// one group), 5 GEMMs and 6 kernels, 5 at f32 on several ranks (session 16's
// version had 13-18 launches and a column sum of one thread per column that
// walked every row: 1.23-1.42x slower than the naive candidate at tiny).
static int pkf_mlp_adam_cuda(pkf_context* ctx, const pkf_tensor* in, pkf_tensor* out, cudaStream_t s, int kind) {
  pkf_gemm_state* st = (pkf_gemm_state*)ctx->user_state;
  const pkf_dtype dt = out[0].dtype;
  const int world = ctx->world_size, rank = ctx->rank;
  const int64_t rows = in[0].shape[0], din = in[0].shape[1], dout = in[1].shape[1];
  const int64_t p = out[0].shape[0], hid = (p - dout) / (din + 1 + dout), es = pkf_cu_elem(dt);
  const int64_t part = out[1].shape[0], off = kind == 0 ? 0 : rank * part;
  const int64_t n[4] = {hid * din, hid, dout * hid, dout};
  const ncclComm_t comm = (ncclComm_t)ctx->nccl;
  // f32 workspace: X, params (both only where they are not the inputs
  // themselves), h, d out, d h, gradient, gradient shard.
  const size_t floats = (size_t)(rows * din + p + 2 * rows * hid + rows * dout + p + part);
  float* ws = (float*)pkf_gemm_buffer(st, 0, floats * sizeof(float));
  if (ws == NULL) return 103;
  char* flat = (char*)out[0].data;
  float* xf = ws;
  float* pf = xf + rows * din;
  if (world > 1) {
    // Rank 0's parameters (W1|b1|W2|b2) broadcast straight into the flat
    // params; ddp: its optimizer state too. One NCCL group.
    PKF_NCCL(ncclGroupStart());
    int64_t at = 0;
    for (int i = 0; i < 4; ++i) {
      PKF_NCCL(ncclBroadcast(rank == 0 ? in[2 + i].data : flat + at * es, flat + at * es, (size_t)n[i],
                             pkf_nccl_type(dt), 0, comm, s));
      at += n[i];
    }
    if (kind == 0) {
      PKF_NCCL(ncclBroadcast(rank == 0 ? in[6].data : out[1].data, out[1].data, (size_t)p, pkf_nccl_type(dt), 0,
                             comm, s));
      PKF_NCCL(ncclBroadcast(rank == 0 ? in[7].data : out[2].data, out[2].data, (size_t)p, pkf_nccl_type(dt), 0,
                             comm, s));
    }
    PKF_NCCL(ncclGroupEnd());
    if (dt == PKF_F32) {
      // The GEMMs read X and the broadcast params in place; Adam then reads
      // and writes each element of params in the same thread.
      xf = (float*)in[0].data;
      pf = (float*)flat;
    } else {
      pkf_mlp_segments seg = {{in[0].data, flat}, {rows * din, p}, 2};
      pkf_mlp_to_f32<<<pkf_cu_blocks(rows * din + p), 256, 0, s>>>(seg, dt, xf, rows * din + p);
    }
  } else {
    // One rank: the four parameter tensors (and X unless f32) gathered into
    // the f32 workspace in one launch; Adam writes every element of params.
    const bool x_in = dt != PKF_F32;
    pkf_mlp_segments seg = {{in[0].data, in[2].data, in[3].data, in[4].data, in[5].data},
                            {rows * din, n[0], n[1], n[2], n[3]}, 5};
    if (!x_in) {
      for (int i = 0; i < 4; ++i) {
        seg.src[i] = seg.src[i + 1];
        seg.n[i] = seg.n[i + 1];
      }
      seg.k = 4;
      xf = (float*)in[0].data;
    }
    const int64_t total = (x_in ? rows * din : 0) + p;
    pkf_mlp_to_f32<<<pkf_cu_blocks(total), 256, 0, s>>>(seg, dt, x_in ? xf : pf, total);
  }
  float* hb = ws + rows * din + p;
  float* dh = hb + rows * hid;
  float* db = dh + rows * hid;
  float* grad = db + rows * dout;
  float* gpart = grad + p;
  float* w1 = pf;
  float* b1 = w1 + n[0];
  float* w2 = b1 + n[1];
  float* b2 = w2 + n[2];
  float* g_w1 = grad;
  float* g_b1 = g_w1 + n[0];
  float* g_w2 = g_b1 + n[1];
  float* g_b2 = g_w2 + n[2];
  cublasHandle_t h = st->handle;
  if (cublasSetStream(h, s) != CUBLAS_STATUS_SUCCESS) return 104;
  const dim3 tile(32, 32);
  int rc;
  if ((rc = pkf_mlp_gemm(h, false, true, rows, hid, din, xf, din, w1, din, hb, hid)) != 0) return rc;
  pkf_mlp_bias_relu<<<pkf_cu_blocks(rows * hid), 256, 0, s>>>(hb, b1, hid, rows * hid);
  if ((rc = pkf_mlp_gemm(h, false, true, rows, dout, hid, hb, hid, w2, hid, db, dout)) != 0) return rc;
  pkf_mlp_loss_grad<<<pkf_cu_blocks(rows * dout), 256, 0, s>>>(db, b2, in[1].data, dt, dout,
                                                                2.0f / (float)(rows * dout), rows * dout);
  if ((rc = pkf_mlp_gemm(h, true, false, dout, hid, rows, db, dout, hb, hid, g_w2, hid)) != 0) return rc;
  pkf_mlp_colsum<<<(unsigned)((dout + 31) / 32), tile, 0, s>>>(db, NULL, rows, dout, g_b2);
  if ((rc = pkf_mlp_gemm(h, false, false, rows, hid, dout, db, dout, w2, hid, dh, hid)) != 0) return rc;
  pkf_mlp_colsum<<<(unsigned)((hid + 31) / 32), tile, 0, s>>>(dh, hb, rows, hid, g_b1);
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
  // ddp on several ranks: the state was broadcast into out[1], out[2].
  const bool state_out = kind == 0 && world > 1;
  const void* m_in = state_out ? out[1].data : in[6].data;
  const void* v_in = state_out ? out[2].data : in[7].data;
  pkf_mlp_adam<<<pkf_cu_blocks(part), 256, 0, s>>>(pf + off, g, 1.0f / (float)world, m_in, v_in, mine, out[1].data,
                                                   out[2].data, dt, part);
  PKF_CU(cudaGetLastError());
  if (kind != 0 && world > 1)
    PKF_NCCL(ncclAllGather(mine, flat, (size_t)part, pkf_nccl_type(dt), comm, s));
  return 0;
}

#endif  // PKFORGE_PROBLEMS_COMMON_MLP_ADAM_CUH_
