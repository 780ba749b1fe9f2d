// sample_sort cuda reference: what a strong PyTorch user does for shards of
// this size (a few thousand elements per rank) instead of PKB's multi-round
// sample sort: one ncclAllGather of every shard, one device radix sort of
// the world*N values (cub::DeviceRadixSort, as torch.sort), and a copy of this
// rank's block. World 1: the sort writes the output. Written with the
// candidate ABI: it is also compiled as a candidate.
#include <cub/device/device_radix_sort.cuh>

#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

typedef struct {
  void* gathered;
  void* sorted;
  void* temp;
  size_t cap, temp_cap;
} sort_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  sort_state* s = (sort_state*)calloc(1, sizeof(sort_state));
  if (s == NULL) return 1;
  ctx->user_state = s;
  return 0;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  sort_state* s = (sort_state*)ctx->user_state;
  if (s == NULL) return;
  cudaFree(s->gathered); cudaFree(s->sorted); cudaFree(s->temp);
  free(s);
  ctx->user_state = NULL;
}

template <typename T>
static int sort_keys(sort_state* st, const void* keys, void* dst, int n, cudaStream_t s) {
  size_t need = 0;
  PKF_CU(cub::DeviceRadixSort::SortKeys(NULL, need, (const T*)keys, (T*)dst, n, 0, (int)(8 * sizeof(T)), s));
  if (st->temp_cap < need) {
    cudaFree(st->temp);
    st->temp = NULL;
    st->temp_cap = 0;
    PKF_CU(cudaMalloc(&st->temp, need));
    st->temp_cap = need;
  }
  PKF_CU(cub::DeviceRadixSort::SortKeys(st->temp, need, (const T*)keys, (T*)dst, n, 0, (int)(8 * sizeof(T)), s));
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  sort_state* st = (sort_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const int w = ctx->world_size;
  const pkf_dtype dt = in[0].dtype;
  const int64_t n = in[0].shape[0], es = pkf_cu_elem(dt);
  const size_t bytes = (size_t)(w * n * es);
  if (st->cap < bytes) {
    cudaFree(st->gathered); cudaFree(st->sorted);
    st->gathered = NULL; st->sorted = NULL; st->cap = 0;
    PKF_CU(cudaMalloc(&st->gathered, bytes));
    PKF_CU(cudaMalloc(&st->sorted, bytes));
    st->cap = bytes;
  }
  const void* keys = in[0].data;
  if (w > 1) {
    PKF_NCCL(ncclAllGather(in[0].data, st->gathered, (size_t)n, pkf_nccl_type(dt), (ncclComm_t)ctx->nccl, s));
    keys = st->gathered;
  }
  void* dst = w > 1 ? st->sorted : out[0].data;
  int rc = dt == PKF_F32   ? sort_keys<float>(st, keys, dst, (int)(w * n), s)
           : dt == PKF_F16 ? sort_keys<__half>(st, keys, dst, (int)(w * n), s)
                           : sort_keys<__nv_bfloat16>(st, keys, dst, (int)(w * n), s);
  if (rc != 0) return rc;
  if (w > 1)
    PKF_CU(cudaMemcpyAsync(out[0].data, (const char*)st->sorted + ctx->rank * n * es, (size_t)(n * es),
                           cudaMemcpyDeviceToDevice, s));
  return 0;
}
