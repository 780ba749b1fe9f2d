// Naive cuda solution shared by ddp, zero1 and zero2: every rank publishes its
// inputs into its symmetric scratch and meets its peers at the host barrier;
// then each rank recomputes every rank's gradient with one-thread-per-output
// kernels reading the peers' X and y through the peer mappings (no NCCL, no
// cuBLAS), and applies Adam to every element it must write.
#ifndef PKFORGE_PROBLEMS_COMMON_MLP_ADAM_NAIVE_CUH_
#define PKFORGE_PROBLEMS_COMMON_MLP_ADAM_NAIVE_CUH_

#include "cuda_util.cuh"

typedef struct {
  float* buf;
  size_t cap;
} pkf_mlp_naive_state;

// h[r, j] = relu(b1[j] + sum_c X[r, c] W1[j, c]).
static __global__ void pkf_mlpn_hidden(const void* x, const void* w1, const void* b1, pkf_dtype dt, int64_t rows,
                                       int64_t din, int64_t hid, float* h) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * hid; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / hid, j = i % hid;
    float z = pkf_dload(b1, dt, j);
    for (int64_t c = 0; c < din; ++c) z += pkf_dload(x, dt, r * din + c) * pkf_dload(w1, dt, j * din + c);
    h[i] = z > 0.0f ? z : 0.0f;
  }
}
// e[r, o] = (b2[o] + sum_j h[r, j] W2[o, j] - y[r, o]) * 2 / (rows * dout).
static __global__ void pkf_mlpn_err(const float* h, const void* w2, const void* b2, const void* y, pkf_dtype dt,
                                    int64_t rows, int64_t hid, int64_t dout, float* e) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * dout; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / dout, o = i % dout;
    float z = pkf_dload(b2, dt, o);
    for (int64_t j = 0; j < hid; ++j) z += h[r * hid + j] * pkf_dload(w2, dt, o * hid + j);
    e[i] = (z - pkf_dload(y, dt, i)) * 2.0f / (float)(rows * dout);
  }
}
// d[r, j] = (h > 0) * sum_o e[r, o] W2[o, j].
static __global__ void pkf_mlpn_back(const float* h, const float* e, const void* w2, pkf_dtype dt, int64_t rows,
                                     int64_t hid, int64_t dout, float* d) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * hid; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / hid, j = i % hid;
    float z = 0.0f;
    if (h[i] > 0.0f)
      for (int64_t o = 0; o < dout; ++o) z += e[r * dout + o] * pkf_dload(w2, dt, o * hid + j);
    d[i] = z;
  }
}
// g[i] += this rank's gradient element i (flat W1|b1|W2|b2).
static __global__ void pkf_mlpn_grad(const float* h, const float* e, const float* d, const void* x, pkf_dtype dt,
                                     int64_t rows, int64_t din, int64_t hid, int64_t dout, float* g) {
  const int64_t n1 = hid * din, n2 = n1 + hid, n3 = n2 + dout * hid, n = n3 + dout;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    float z = 0.0f;
    if (i < n1) {
      for (int64_t r = 0; r < rows; ++r) z += d[r * hid + i / din] * pkf_dload(x, dt, r * din + i % din);
    } else if (i < n2) {
      for (int64_t r = 0; r < rows; ++r) z += d[r * hid + (i - n1)];
    } else if (i < n3) {
      const int64_t o = (i - n2) / hid, j = (i - n2) % hid;
      for (int64_t r = 0; r < rows; ++r) z += e[r * dout + o] * h[r * hid + j];
    } else {
      for (int64_t r = 0; r < rows; ++r) z += e[r * dout + (i - n3)];
    }
    g[i] += z;
  }
}
// Adam (t = 4) on every element; state of element i from its owner's shard.
static __global__ void pkf_mlpn_adam(const float* g, int world, int rank, int sharded, int64_t part, pkf_cu_peers w1,
                                     pkf_cu_peers b1, pkf_cu_peers w2, pkf_cu_peers b2, pkf_cu_peers mi,
                                     pkf_cu_peers vi, pkf_dtype dt, int64_t din, int64_t hid, int64_t dout, void* w_out,
                                     void* m_out, void* v_out) {
  const int64_t n1 = hid * din, n2 = n1 + hid, n3 = n2 + dout * hid, n = n3 + dout;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float w = i < n1 ? pkf_dload(w1.p[0], dt, i)
                    : i < n2 ? pkf_dload(b1.p[0], dt, i - n1)
                    : i < n3 ? pkf_dload(w2.p[0], dt, i - n2)
                             : pkf_dload(b2.p[0], dt, i - n3);
    const int owner = sharded ? (int)(i / part) : 0;
    const int64_t at = sharded ? i % part : i;
    const float gi = g[i] / (float)world;
    const float m = 0.9f * pkf_dload(mi.p[owner], dt, at) + 0.1f * gi;
    const float v = 0.999f * pkf_dload(vi.p[owner], dt, at) + 0.001f * gi * gi;
    const float bc1 = 1.0f - 0.6561f, bc2 = 1.0f - 0.996005996001f;  // 0.9^4, 0.999^4
    pkf_dstore(w_out, dt, i, w - 1e-3f * (m / bc1) / (sqrtf(v / bc2) + 1e-8f));
    if (!sharded || owner == rank) {
      pkf_dstore(m_out, dt, at, m);
      pkf_dstore(v_out, dt, at, v);
    }
  }
}

static int pkf_mlp_naive_setup(pkf_context* ctx) {
  pkf_mlp_naive_state* s = (pkf_mlp_naive_state*)calloc(1, sizeof(pkf_mlp_naive_state));
  if (s == NULL) return 1;
  ctx->user_state = s;
  return 0;
}
static void pkf_mlp_naive_teardown(pkf_context* ctx) {
  pkf_mlp_naive_state* s = (pkf_mlp_naive_state*)ctx->user_state;
  if (s == NULL) return;
  if (s->buf) cudaFree(s->buf);
  free(s);
  ctx->user_state = NULL;
}

static int pkf_mlp_naive_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out, cudaStream_t s,
                             int sharded) {
  pkf_mlp_naive_state* st = (pkf_mlp_naive_state*)ctx->user_state;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t rows = in[0].shape[0], din = in[0].shape[1], dout = in[1].shape[1];
  const int64_t p = out[0].shape[0], hid = (p - dout) / (din + 1 + dout), part = out[1].shape[0];
  const size_t need = (size_t)(2 * rows * hid + rows * dout + p) * sizeof(float);
  if (st->cap < need) {
    if (st->buf) cudaFree(st->buf);
    st->buf = NULL;
    st->cap = 0;
    PKF_CU(cudaMalloc(&st->buf, need));
    st->cap = need;
  }
  float* h = st->buf;
  float* d = h + rows * hid;
  float* e = d + rows * hid;
  float* g = e + rows * dout;
  PKF_CU(cudaMemsetAsync(g, 0, (size_t)p * sizeof(float), s));
  const void* const* par = peer_in[0];
  for (int j = 0; j < ctx->world_size; ++j) {
    pkf_mlpn_hidden<<<pkf_cu_blocks(rows * hid), 256, 0, s>>>(peer_in[j][0], par[2], par[3], dt, rows, din, hid, h);
    pkf_mlpn_err<<<pkf_cu_blocks(rows * dout), 256, 0, s>>>(h, par[4], par[5], peer_in[j][1], dt, rows, hid, dout, e);
    pkf_mlpn_back<<<pkf_cu_blocks(rows * hid), 256, 0, s>>>(h, e, par[4], dt, rows, hid, dout, d);
    pkf_mlpn_grad<<<pkf_cu_blocks(p), 256, 0, s>>>(h, e, d, peer_in[j][0], dt, rows, din, hid, dout, g);
  }
  pkf_mlpn_adam<<<pkf_cu_blocks(p), 256, 0, s>>>(
      g, ctx->world_size, ctx->rank, sharded, part, pkf_cu_peer_input(ctx, peer_in, 2),
      pkf_cu_peer_input(ctx, peer_in, 3), pkf_cu_peer_input(ctx, peer_in, 4), pkf_cu_peer_input(ctx, peer_in, 5),
      pkf_cu_peer_input(ctx, peer_in, 6), pkf_cu_peer_input(ctx, peer_in, 7), dt, din, hid, dout, out[0].data,
      out[1].data, out[2].data);
  return pkf_cu_finish(ctx, s);
}

#endif  // PKFORGE_PROBLEMS_COMMON_MLP_ADAM_NAIVE_CUH_
