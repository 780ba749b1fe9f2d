// gnn_feature_exchange cuda reference, as PKB 65's PyTorch does it:
// gathered = local_features[seed_inverse_ids] (one gather kernel into a
// staging buffer), then dist.all_to_all over the rotated chunk lists (one
// NCCL group of send/recv pairs, received straight into the output). World 1:
// the gather writes the output. Written with the candidate ABI: it is also
// compiled as a candidate.
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

typedef struct {
  char* gathered;
  size_t cap;
} gnn_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  gnn_state* s = (gnn_state*)calloc(1, sizeof(gnn_state));
  if (s == NULL) return 1;
  ctx->user_state = s;
  return 0;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  gnn_state* s = (gnn_state*)ctx->user_state;
  if (s == NULL) return;
  cudaFree(s->gathered);
  free(s);
  ctx->user_state = NULL;
}

// dst row k = src row ids[k]; rows of `words` 16-bit words (or 16-byte vectors).
__global__ void gnn_gather2(const uint16_t* src, const long long* ids, int64_t n_rows, int64_t words, uint16_t* dst) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_rows * words; i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = src[ids[i / words] * words + i % words];
}
__global__ void gnn_gather16(const uint4* src, const long long* ids, int64_t n_rows, int64_t vecs, uint4* dst) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_rows * vecs; i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = src[ids[i / vecs] * vecs + i % vecs];
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  gnn_state* st = (gnn_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const int w = ctx->world_size, r = ctx->rank;
  const int64_t n_rows = in[1].shape[0], rows = n_rows / w;
  const int64_t row_bytes = in[0].shape[1] * pkf_cu_elem(in[0].dtype);
  const size_t bytes = (size_t)(n_rows * row_bytes);
  char* dst = (char*)out[0].data;
  if (w > 1) {
    PKF_CU(pkf_cu_reserve(&st->gathered, &st->cap, bytes));
    dst = st->gathered;
  }
  const long long* ids = (const long long*)in[1].data;
  if (row_bytes % 16 == 0)
    gnn_gather16<<<pkf_cu_blocks(n_rows * row_bytes / 16), 256, 0, s>>>((const uint4*)in[0].data, ids, n_rows,
                                                                        row_bytes / 16, (uint4*)dst);
  else
    gnn_gather2<<<pkf_cu_blocks(n_rows * row_bytes / 2), 256, 0, s>>>((const uint16_t*)in[0].data, ids, n_rows,
                                                                      row_bytes / 2, (uint16_t*)dst);
  PKF_CU(cudaGetLastError());
  if (w == 1) return 0;
  // Rank r sends its chunk (i - r) mod w to rank i and receives rank i's into
  // its output chunk (i - r) mod w.
  const size_t chunk = (size_t)(rows * row_bytes);
  ncclComm_t comm = (ncclComm_t)ctx->nccl;
  PKF_NCCL(ncclGroupStart());
  for (int i = 0; i < w; ++i) {
    const int c = ((i - r) % w + w) % w;
    PKF_NCCL(ncclSend(st->gathered + c * chunk, chunk, ncclUint8, i, comm, s));
    PKF_NCCL(ncclRecv((char*)out[0].data + c * chunk, chunk, ncclUint8, i, comm, s));
  }
  PKF_NCCL(ncclGroupEnd());
  return 0;
}
