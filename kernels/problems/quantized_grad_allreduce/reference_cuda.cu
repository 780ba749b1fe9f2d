// quantized_grad_allreduce cuda reference, PKB's PyTorch code fused as a strong
// user writes it: one kernel quantizes and dequantizes (one warp per block:
// absmax by warp shuffles, IEEE f32 division, round half to even) into an f32
// buffer, one in-place ncclAllReduce (sum, f32), one kernel divides by world
// and rounds to the dtype. Written with the candidate ABI: it is also compiled
// as a candidate (ref_cuda_quantized_grad_allreduce.so).
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

typedef struct {
  float* acc;
  size_t cap;
} pkf_qar_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  ctx->user_state = calloc(1, sizeof(pkf_qar_state));
  return ctx->user_state == NULL;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  pkf_qar_state* st = (pkf_qar_state*)ctx->user_state;
  if (st == NULL) return;
  if (st->acc) cudaFree(st->acc);
  free(st);
}

// One warp per quantization block; 8 warps per thread block.
__global__ void pkf_qar_quant(const void* x, pkf_dtype dt, int64_t blocks, int64_t bs, float* acc) {
  const int lane = threadIdx.x & 31;
  for (int64_t b = blockIdx.x * 8 + (threadIdx.x >> 5); b < blocks; b += (int64_t)gridDim.x * 8) {
    float amax = 0.0f;
    for (int64_t i = lane; i < bs; i += 32) amax = fmaxf(amax, fabsf(pkf_dload(x, dt, b * bs + i)));
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float scale = __fdiv_rn(fmaxf(amax, 1e-8f), 127.0f);
    for (int64_t i = lane; i < bs; i += 32) {
      const float q = fminf(fmaxf(rintf(__fdiv_rn(pkf_dload(x, dt, b * bs + i), scale)), -127.0f), 127.0f);
      acc[b * bs + i] = q * scale;
    }
  }
}

__global__ void pkf_qar_mean(const float* acc, void* out, pkf_dtype dt, float w, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    pkf_dstore(out, dt, i, acc[i] / w);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_qar_state* st = (pkf_qar_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int64_t blocks = in[0].shape[0], bs = in[0].shape[1], n = blocks * bs;
  const size_t bytes = sizeof(float) * (size_t)n;
  PKF_CU(pkf_cu_reserve(&st->acc, &st->cap, bytes));
  int grid = (int)((blocks + 7) / 8);
  if (grid > 65535) grid = 65535;
  pkf_qar_quant<<<grid, 256, 0, s>>>(in[0].data, dt, blocks, bs, st->acc);
  PKF_CU(cudaGetLastError());
  if (ctx->world_size > 1)
    PKF_NCCL(ncclAllReduce(st->acc, st->acc, (size_t)n, ncclFloat32, ncclSum, (ncclComm_t)ctx->nccl, s));
  pkf_qar_mean<<<pkf_cu_blocks(n), 256, 0, s>>>(st->acc, out[0].data, dt, (float)ctx->world_size, n);
  PKF_CU(cudaGetLastError());
  return 0;
}
