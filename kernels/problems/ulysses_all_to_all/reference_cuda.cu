// ulysses_all_to_all cuda reference: what PyTorch's
// all_to_all(list of row chunks) + cat(dim=1) does, as one NCCL group of
// send/recv pairs into a staging buffer [world][M/world][N], then one
// permute kernel into y [M/world, world*N]. Written with the candidate ABI: it
// is also compiled as a candidate (ref_cuda_ulysses_all_to_all.so).
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

typedef struct {
  void* stage;
  size_t cap;
} pkf_ulysses_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  ctx->user_state = calloc(1, sizeof(pkf_ulysses_state));
  return ctx->user_state == NULL;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  pkf_ulysses_state* st = (pkf_ulysses_state*)ctx->user_state;
  if (st == NULL) return;
  if (st->stage) cudaFree(st->stage);
  free(st);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_ulysses_state* st = (pkf_ulysses_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const int w = ctx->world_size;
  const int64_t es = pkf_cu_elem(in[0].dtype);
  const int64_t n = in[0].shape[1], rows = in[0].shape[0] / w;
  const size_t bytes = (size_t)(in[0].shape[0] * n * es);
  if (w == 1) {
    PKF_CU(cudaMemcpyAsync(out[0].data, in[0].data, bytes, cudaMemcpyDeviceToDevice, s));
    return 0;
  }
  PKF_CU(pkf_cu_reserve(&st->stage, &st->cap, bytes));
  const ncclDataType_t t = pkf_nccl_type(in[0].dtype);
  const size_t chunk = (size_t)(rows * n);
  ncclComm_t comm = (ncclComm_t)ctx->nccl;
  PKF_NCCL(ncclGroupStart());
  for (int j = 0; j < w; ++j) {
    PKF_NCCL(ncclSend((const char*)in[0].data + j * chunk * es, chunk, t, j, comm, s));
    PKF_NCCL(ncclRecv((char*)st->stage + j * chunk * es, chunk, t, j, comm, s));
  }
  PKF_NCCL(ncclGroupEnd());
  return pkf_cu_cat_ranks(st->stage, out[0].data, es, w, rows, n, s);
}
