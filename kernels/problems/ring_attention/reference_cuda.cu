// ring_attention cuda reference (causal forward): the all-gather variant of
// context parallelism, as a strong PyTorch user writes it for short
// sequences: one NCCL group all-gathers k and v; a kernel lays out q and the
// causal prefix of the keys (ranks 0..r) as f32 [B*NH][len][D] (PKB's
// transpose(1, 2).float()); a strided-batched cublasGemmEx computes the scores
// (f32, no TF32), a kernel applies the causal mask and the softmax per row, a
// second batched GEMM multiplies by v, and a kernel writes out [B, S, NH, D]
// in the dtype. Written with the candidate ABI: it is also compiled as a
// candidate (ref_cuda_ring_attention.so).
#include "pkforge/candidate.h"
#include "../common/cublas_util.cuh"

extern "C" int pkf_setup(pkf_context* ctx) { return pkf_gemm_setup(ctx); }
extern "C" void pkf_teardown(pkf_context* ctx) { pkf_gemm_teardown(ctx); }

// src [w][B][S][NH][D] (rank-major, as gathered; w = 1: one rank's tensor) ->
// dst f32 [B][NH][len][D] for positions [0, len) of the global sequence.
__global__ void pkf_ra_layout(const void* src, pkf_dtype dt, float* dst, int64_t bb, int64_t s_len, int64_t nh,
                              int64_t hd, int64_t len) {
  const int64_t total = bb * nh * len * hd;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t d = i % hd, p = (i / hd) % len, h = (i / (hd * len)) % nh, b = i / (hd * len * nh);
    const int64_t j = p / s_len, s = p % s_len;
    dst[i] = pkf_dload(src, dt, (((j * bb + b) * s_len + s) * nh + h) * hd + d);
  }
}

// One warp per row of scores [B*NH][S][len]; row i of rank r sees keys <= r*S + i.
__global__ void pkf_ra_softmax(float* sc, int64_t rows, int64_t s_len, int64_t len, int64_t q0) {
  const int lane = threadIdx.x & 31;
  for (int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32; row < rows;
       row += (int64_t)gridDim.x * (blockDim.x / 32)) {
    float* x = sc + row * len;
    const int64_t last = q0 + row % s_len;
    float mx = -INFINITY;
    for (int64_t p = lane; p <= last; p += 32) mx = fmaxf(mx, x[p]);
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float z = 0.0f;
    for (int64_t p = lane; p <= last; p += 32) {
      const float e = __expf(x[p] - mx);
      x[p] = e;
      z += e;
    }
    for (int o = 16; o > 0; o >>= 1) z += __shfl_xor_sync(0xffffffffu, z, o);
    const float inv = 1.0f / z;
    for (int64_t p = lane; p < len; p += 32) x[p] = p <= last ? x[p] * inv : 0.0f;
  }
}

// of f32 [B][NH][S][D] -> out [B][S][NH][D] in the dtype.
__global__ void pkf_ra_out(const float* of, void* out, pkf_dtype dt, int64_t bb, int64_t s_len, int64_t nh, int64_t hd) {
  const int64_t total = bb * s_len * nh * hd;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t d = i % hd, h = (i / hd) % nh, s = (i / (hd * nh)) % s_len, b = i / (hd * nh * s_len);
    pkf_dstore(out, dt, i, of[((b * nh + h) * s_len + s) * hd + d]);
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_gemm_state* st = (pkf_gemm_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int64_t w = ctx->world_size, r = ctx->rank, es = pkf_cu_elem(dt);
  const int64_t bb = in[0].shape[0], s_len = in[0].shape[1], nh = in[0].shape[2], hd = in[0].shape[3];
  const int64_t shard = bb * s_len * nh * hd, len = (r + 1) * s_len, batch = bb * nh;
  const void* kg = in[1].data;
  const void* vg = in[2].data;
  if (w > 1) {
    char* g = (char*)pkf_gemm_buffer(st, 0, (size_t)(2 * w * shard * es));
    if (g == NULL) return 103;
    ncclComm_t comm = (ncclComm_t)ctx->nccl;
    const ncclDataType_t t = pkf_nccl_type(dt);
    PKF_NCCL(ncclGroupStart());
    PKF_NCCL(ncclAllGather(in[1].data, g, (size_t)shard, t, comm, s));
    PKF_NCCL(ncclAllGather(in[2].data, g + w * shard * es, (size_t)shard, t, comm, s));
    PKF_NCCL(ncclGroupEnd());
    kg = g;
    vg = g + w * shard * es;
  }
  // f32 work: qf [batch][S][D], kf, vf [batch][len][D], sc [batch][S][len], of [batch][S][D].
  const int64_t nq = batch * s_len * hd, nk = batch * len * hd, nsc = batch * s_len * len;
  float* qf = (float*)pkf_gemm_buffer(st, 1, sizeof(float) * (size_t)(2 * nq + 2 * nk + nsc));
  if (qf == NULL) return 103;
  float* kf = qf + nq;
  float* vf = kf + nk;
  float* sc = vf + nk;
  float* of = sc + nsc;
  pkf_ra_layout<<<pkf_cu_blocks(nq), 256, 0, s>>>(in[0].data, dt, qf, bb, s_len, nh, hd, s_len);
  pkf_ra_layout<<<pkf_cu_blocks(nk), 256, 0, s>>>(kg, dt, kf, bb, s_len, nh, hd, len);
  pkf_ra_layout<<<pkf_cu_blocks(nk), 256, 0, s>>>(vg, dt, vf, bb, s_len, nh, hd, len);
  PKF_CU(cudaGetLastError());
  if (cublasSetStream(st->handle, s) != CUBLAS_STATUS_SUCCESS) return 104;
  const float scale = 1.0f / sqrtf((float)hd), one = 1.0f, zero = 0.0f;
  // Row-major sc[S][len] = q[S][D] k[len][D]^T: column-major sc^T = k (op T) x q^T.
  if (cublasGemmStridedBatchedEx(st->handle, CUBLAS_OP_T, CUBLAS_OP_N, (int)len, (int)s_len, (int)hd, &scale, kf,
                                 CUDA_R_32F, (int)hd, len * hd, qf, CUDA_R_32F, (int)hd, s_len * hd, &zero, sc,
                                 CUDA_R_32F, (int)len, s_len * len, (int)batch, CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
    return 102;
  const int64_t rows = batch * s_len;
  int blocks = (int)((rows + 7) / 8);
  if (blocks > 65535) blocks = 65535;
  pkf_ra_softmax<<<blocks, 256, 0, s>>>(sc, rows, s_len, len, r * s_len);
  PKF_CU(cudaGetLastError());
  // Row-major of[S][D] = p[S][len] v[len][D]: column-major of^T = v^T x p^T.
  if (cublasGemmStridedBatchedEx(st->handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)hd, (int)s_len, (int)len, &one, vf,
                                 CUDA_R_32F, (int)hd, len * hd, sc, CUDA_R_32F, (int)len, s_len * len, &zero, of,
                                 CUDA_R_32F, (int)hd, s_len * hd, (int)batch, CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
    return 102;
  pkf_ra_out<<<pkf_cu_blocks(shard), 256, 0, s>>>(of, out[0].data, dt, bb, s_len, nh, hd);
  PKF_CU(cudaGetLastError());
  return 0;
}
