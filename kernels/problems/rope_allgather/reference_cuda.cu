// rope_allgather cuda reference, as a PyTorch user with a fused RoPE kernel
// (apex/flash-attn style: f32 math, rounded once) and dist.all_gather + cat(dim=1)
// does it: one kernel rotates q and k into a staging buffer [2][B, S, NH, D],
// one ncclAllGather of both into [world][2][B, S, NH, D], one permute kernel
// into q_out and k_out [B, world*S, NH, D]. At world 1 the rotation writes the
// outputs directly. Written with the candidate ABI: it is also compiled as a
// candidate (ref_cuda_rope_allgather.so).
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

typedef struct {
  void* stage;
  void* gathered;
  size_t cap_stage, cap_gathered;
} pkf_rope_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  ctx->user_state = calloc(1, sizeof(pkf_rope_state));
  return ctx->user_state == NULL;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  pkf_rope_state* st = (pkf_rope_state*)ctx->user_state;
  if (st == NULL) return;
  if (st->stage) cudaFree(st->stage);
  if (st->gathered) cudaFree(st->gathered);
  free(st);
}

static int pkf_rope_reserve(void** p, size_t* cap, size_t bytes) {
  if (*cap >= bytes) return 0;
  if (*p) cudaFree(*p);
  *p = NULL;
  *cap = 0;
  PKF_CU(cudaMalloc(p, bytes));
  *cap = bytes;
  return 0;
}

// q, k [B, S, NH, D] -> yq, yk [B, S, NH, D]; cos, sin [B, S, D].
__global__ void pkf_rope_rotate(const void* q, const void* k, const void* cs, const void* sn, void* yq,
                                void* yk, pkf_dtype dt, int64_t shard, int64_t nh, int64_t d_n) {
  const int64_t half = d_n / 2;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < 2 * shard;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int t = i >= shard;
    const int64_t e = i - t * shard, d = e % d_n, pos = e / (nh * d_n);
    const void* x = t ? k : q;
    const float rot = d < half ? -pkf_dload(x, dt, e + half) : pkf_dload(x, dt, e - half);
    const float c = pkf_dload(cs, dt, pos * d_n + d), s = pkf_dload(sn, dt, pos * d_n + d);
    pkf_dstore(t ? yk : yq, dt, e, pkf_dload(x, dt, e) * c + rot * s);
  }
}

// gathered [w][2][B][S][row] -> yq, yk [B][w*S][row] (row = NH*D), in units of T.
template <typename T>
__global__ void pkf_rope_permute(const T* gathered, T* yq, T* yk, int w, int64_t b_n, int64_t s_n,
                                 int64_t row) {
  const int64_t per_out = b_n * w * s_n * row, shard = b_n * s_n * row;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < 2 * per_out;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int t = i >= per_out;
    const int64_t o = i - t * per_out, c = o % row, p = (o / row) % (w * s_n), b = o / (row * w * s_n);
    const int64_t j = p / s_n, s = p % s_n;
    (t ? yk : yq)[o] = gathered[(j * 2 + t) * shard + (b * s_n + s) * row + c];
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_rope_state* st = (pkf_rope_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int w = ctx->world_size;
  const int64_t b_n = in[0].shape[0], s_n = in[0].shape[1], nh = in[0].shape[2], d_n = in[0].shape[3];
  const int64_t shard = b_n * s_n * nh * d_n, es = pkf_cu_elem(dt);
  if (w == 1) {
    pkf_rope_rotate<<<pkf_cu_blocks(2 * shard), 256, 0, s>>>(in[0].data, in[1].data, in[2].data, in[3].data,
                                                              out[0].data, out[1].data, dt, shard, nh, d_n);
    PKF_CU(cudaGetLastError());
    return 0;
  }
  int rc = pkf_rope_reserve(&st->stage, &st->cap_stage, (size_t)(2 * shard * es));
  if (rc == 0) rc = pkf_rope_reserve(&st->gathered, &st->cap_gathered, (size_t)(w * 2 * shard * es));
  if (rc != 0) return rc;
  char* stage = (char*)st->stage;
  pkf_rope_rotate<<<pkf_cu_blocks(2 * shard), 256, 0, s>>>(in[0].data, in[1].data, in[2].data, in[3].data,
                                                            stage, stage + shard * es, dt, shard, nh, d_n);
  PKF_CU(cudaGetLastError());
  PKF_NCCL(ncclAllGather(stage, st->gathered, (size_t)(2 * shard), pkf_nccl_type(dt), (ncclComm_t)ctx->nccl, s));
  const int blocks = pkf_cu_blocks(2 * w * shard);
  if (es == 4)
    pkf_rope_permute<<<blocks, 256, 0, s>>>((const float*)st->gathered, (float*)out[0].data,
                                            (float*)out[1].data, w, b_n, s_n, nh * d_n);
  else
    pkf_rope_permute<<<blocks, 256, 0, s>>>((const uint16_t*)st->gathered, (uint16_t*)out[0].data,
                                            (uint16_t*)out[1].data, w, b_n, s_n, nh * d_n);
  PKF_CU(cudaGetLastError());
  return 0;
}
