// ulysses_gather_seq_scatter_heads cuda reference, as PyTorch does it (tensor_split + contiguous, one
// all_to_all, cat): a pack kernel, one NCCL group of send/recv pairs, an unpack
// kernel (common/ulysses_cuda.cuh, shared with the other Ulysses layouts);
// this file gives the [P][Q][C] views of its shapes. Written with the
// candidate ABI: it is also compiled as a candidate (ref_cuda_ulysses_gather_seq_scatter_heads.so).
#include "pkforge/candidate.h"
#include "../common/ulysses_cuda.cuh"

extern "C" int pkf_setup(pkf_context* ctx) { return pkf_uly_setup(ctx); }
extern "C" void pkf_teardown(pkf_context* ctx) { pkf_uly_teardown(ctx); }

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  const int64_t w = ctx->world_size;
  // x [B*T][w][HL*D] -> send [w][B*T][HL*D]; recv [w][B][T*HL*D] -> y [B][w][T*HL*D].
  const int64_t bb = in[0].shape[0], t_in = in[0].shape[1], hl = in[0].shape[2] / w, hd = in[0].shape[3];
  const int64_t pack_p = bb * t_in, pack_c = hl * hd, unpack_q = bb, unpack_c = t_in * hl * hd;
  return pkf_uly_all_to_all(ctx, &in[0], &out[0], (cudaStream_t)stream, pack_p, pack_c, unpack_q, unpack_c);
}
