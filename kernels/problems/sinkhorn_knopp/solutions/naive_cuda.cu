// sinkhorn_knopp naive cuda solution: every rank copies its logits into its
// symmetric scratch and meets its peers at the host barrier; each rank then
// runs the whole algorithm on the global matrix (all ranks' samples, read
// through the peer mappings) in a private f32 buffer, one thread per prototype
// or per sample, and copies its own samples out.
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

typedef struct {
  float* work;
  size_t cap;
} naive_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  ctx->user_state = calloc(1, sizeof(naive_state));
  return ctx->user_state == NULL;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  naive_state* st = (naive_state*)ctx->user_state;
  if (st == NULL) return;
  if (st->work) cudaFree(st->work);
  free(st);
}

__global__ void fill(pkf_cu_peers x, pkf_dtype dt, int64_t b, int64_t np, int64_t total, float* q) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t c = i / np, k = i % np;
    q[i] = expf(pkf_dload(x.p[c / b], dt, (c % b) * np + k) / 0.07f);
  }
}

__global__ void protos(const float* q, int64_t cols, int64_t np, float* proto) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < np; k += (int64_t)gridDim.x * blockDim.x) {
    float s = 0.0f;
    for (int64_t c = 0; c < cols; ++c) s += q[c * np + k];
    proto[k] = s;
  }
}

__global__ void samples(float* q, int64_t cols, int64_t np, const float* proto) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols; c += (int64_t)gridDim.x * blockDim.x) {
    float s = 0.0f;
    for (int64_t k = 0; k < np; ++k) s += q[c * np + k] / proto[k];
    for (int64_t k = 0; k < np; ++k) q[c * np + k] = q[c * np + k] / proto[k] / s;
  }
}

__global__ void store(const float* q, void* out, pkf_dtype dt, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    pkf_dstore(out, dt, i, q[i]);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  naive_state* st = (naive_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const int64_t b = in[0].shape[0], np = in[0].shape[1], cols = ctx->world_size * b;
  const size_t bytes = sizeof(float) * (size_t)(cols * np + np);
  if (st->cap < bytes) {
    if (st->work) cudaFree(st->work);
    st->work = NULL;
    st->cap = 0;
    PKF_CU(cudaMalloc(&st->work, bytes));
    st->cap = bytes;
  }
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  float* q = st->work;
  float* proto = q + cols * np;
  fill<<<pkf_cu_blocks(cols * np), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), in[0].dtype, b, np, cols * np, q);
  for (int it = 0; it < 3; ++it) {  // the constant factors (mass, NP, TB) cancel
    protos<<<pkf_cu_blocks(np), 256, 0, s>>>(q, cols, np, proto);
    samples<<<pkf_cu_blocks(cols), 256, 0, s>>>(q, cols, np, proto);
  }
  store<<<pkf_cu_blocks(b * np), 256, 0, s>>>(q + ctx->rank * b * np, out[0].data, out[0].dtype, b * np);
  return pkf_cu_finish(ctx, s);
}
