// ulysses_gather_seq_scatter_heads_qkv cuda reference, as PyTorch does it (tensor_split + contiguous, one
// all_to_all, cat): a pack kernel, one NCCL group of send/recv pairs, an unpack
// kernel (common/ulysses_cuda.cuh, shared with the other Ulysses layouts);
// this file gives the [P][Q][C] views of its shapes. Written with the
// candidate ABI: it is also compiled as a candidate (ref_cuda_ulysses_gather_seq_scatter_heads_qkv.so).
#include "pkforge/candidate.h"
#include "../common/ulysses_cuda.cuh"

extern "C" int pkf_setup(pkf_context* ctx) { return pkf_uly_setup(ctx); }
extern "C" void pkf_teardown(pkf_context* ctx) { pkf_uly_teardown(ctx); }

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  const int64_t w = ctx->world_size;
  // x [B*T*3][w][C] -> send [w][B*T*3][C]; recv [w][B][T*3*C] -> y [B][w][T*3*C].
  const int64_t bb = in[0].shape[0], t_in = in[0].shape[1], c = in[0].shape[2] / 3 / w;
  const int64_t pack_p = bb * t_in * 3, pack_c = c, unpack_q = bb, unpack_c = t_in * 3 * c;
  return pkf_uly_all_to_all(ctx, &in[0], &out[0], (cudaStream_t)stream, pack_p, pack_c, unpack_q, unpack_c);
}
