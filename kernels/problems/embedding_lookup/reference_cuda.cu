// embedding_lookup cuda reference, as PyTorch does it with all_to_all_single
// (PKB 10's reference): one kernel partitions the indices stably by owner
// (the boolean-mask selections and cat) and counts them; the counts go
// through a 1-element-per-peer NCCL all-to-all and to the host (PyTorch's
// .tolist()); the local row ids go to their owners (NCCL send/recv group with
// the counts as splits); a gather kernel reads the requested rows of the local
// shard; a second send/recv group returns them straight into y, whose row
// blocks are already in owner order. World 1: one gather kernel. Written with
// the candidate ABI: it is also compiled as a candidate.
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

typedef struct {
  long long* local;    // [M] local row ids, grouped by owner
  long long* counts;   // [2][64] send counts, receive counts
  long long* recv;     // [world*M] row ids asked of this rank
  char* rows;          // [world*M][N] rows returned to the askers
  long long* host;     // pinned [2][64]
  size_t rows_cap;
  int64_t idx_cap;
} emb_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  emb_state* s = (emb_state*)calloc(1, sizeof(emb_state));
  if (s == NULL) return 1;
  PKF_CU(cudaMalloc(&s->counts, 2 * 64 * sizeof(long long)));
  PKF_CU(cudaMallocHost(&s->host, 2 * 64 * sizeof(long long)));
  ctx->user_state = s;
  return 0;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  emb_state* s = (emb_state*)ctx->user_state;
  if (s == NULL) return;
  cudaFree(s->local); cudaFree(s->counts); cudaFree(s->recv); cudaFree(s->rows);
  cudaFreeHost(s->host);
  free(s);
  ctx->user_state = NULL;
}

// One block: per-thread owner counts over a contiguous chunk, an exclusive
// scan per owner over the threads, then a stable scatter of local row ids.
__global__ void emb_partition(const long long* idx, int64_t n, int64_t m, int w, long long* local,
                              long long* counts) {
  __shared__ int cnt[8][1024];
  __shared__ long long base[9];
  const int t = threadIdx.x, nt = blockDim.x;
  const int64_t chunk = (n + nt - 1) / nt, b = min(n, t * chunk), e = min(n, b + chunk);
  int c[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = b; i < e; ++i) ++c[idx[i] / m];
  for (int j = 0; j < w; ++j) cnt[j][t] = c[j];
  __syncthreads();
  if (t < w) {
    int run = 0;
    for (int k = 0; k < nt; ++k) {
      const int v = cnt[t][k];
      cnt[t][k] = run;
      run += v;
    }
    counts[t] = run;
  }
  __syncthreads();
  if (t == 0) {
    base[0] = 0;
    for (int j = 0; j < w; ++j) base[j + 1] = base[j] + counts[j];
  }
  __syncthreads();
  for (int j = 0; j < w; ++j) c[j] = cnt[j][t];
  for (int64_t i = b; i < e; ++i) {
    const int o = (int)(idx[i] / m);
    local[base[o] + c[o]++] = idx[i] - o * m;
  }
}

// dst row k = table row ids[k]; rows of `words` 16-bit words.
__global__ void emb_gather(const uint16_t* table, const long long* ids, int64_t n_rows, int64_t words,
                           uint16_t* dst) {
  const int64_t total = n_rows * words;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = table[ids[i / words] * words + i % words];
}
__global__ void emb_gather4(const uint4* table, const long long* ids, int64_t n_rows, int64_t vecs, uint4* dst) {
  const int64_t total = n_rows * vecs;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = table[ids[i / vecs] * vecs + i % vecs];
}
static int emb_gather_rows(const void* table, const long long* ids, int64_t n_rows, int64_t row_bytes, void* dst,
                           cudaStream_t s) {
  if (n_rows == 0) return 0;
  if (row_bytes % 16 == 0) {
    const int64_t v = row_bytes / 16;
    emb_gather4<<<pkf_cu_blocks(n_rows * v), 256, 0, s>>>((const uint4*)table, ids, n_rows, v, (uint4*)dst);
  } else {
    const int64_t v = row_bytes / 2;
    emb_gather<<<pkf_cu_blocks(n_rows * v), 256, 0, s>>>((const uint16_t*)table, ids, n_rows, v, (uint16_t*)dst);
  }
  PKF_CU(cudaGetLastError());
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  emb_state* st = (emb_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const int w = ctx->world_size;
  const int64_t n_idx = in[0].shape[0], m = in[1].shape[0];
  const int64_t row_bytes = in[1].shape[1] * pkf_cu_elem(in[1].dtype);
  const long long* idx = (const long long*)in[0].data;
  if (w == 1) return emb_gather_rows(in[1].data, idx, n_idx, row_bytes, out[0].data, s);
  if (w > 8) return 110;
  if (st->idx_cap < w * n_idx) {
    cudaFree(st->local); cudaFree(st->recv); cudaFree(st->rows);
    st->local = NULL; st->recv = NULL; st->rows = NULL; st->idx_cap = 0;
    PKF_CU(cudaMalloc(&st->local, n_idx * sizeof(long long)));
    PKF_CU(cudaMalloc(&st->recv, w * n_idx * sizeof(long long)));
    PKF_CU(cudaMalloc(&st->rows, (size_t)(w * n_idx * row_bytes)));
    st->idx_cap = w * n_idx;
    st->rows_cap = (size_t)(w * n_idx * row_bytes);
  } else if (st->rows_cap < (size_t)(w * n_idx * row_bytes)) {
    cudaFree(st->rows);
    st->rows = NULL;
    PKF_CU(cudaMalloc(&st->rows, (size_t)(w * n_idx * row_bytes)));
    st->rows_cap = (size_t)(w * n_idx * row_bytes);
  }
  emb_partition<<<1, 1024, 0, s>>>(idx, n_idx, m, w, st->local, st->counts);
  PKF_CU(cudaGetLastError());
  ncclComm_t comm = (ncclComm_t)ctx->nccl;
  long long* send_n = st->counts;
  long long* recv_n = st->counts + 64;
  PKF_NCCL(ncclGroupStart());
  for (int j = 0; j < w; ++j) {
    PKF_NCCL(ncclSend(send_n + j, 1, ncclInt64, j, comm, s));
    PKF_NCCL(ncclRecv(recv_n + j, 1, ncclInt64, j, comm, s));
  }
  PKF_NCCL(ncclGroupEnd());
  PKF_CU(cudaMemcpyAsync(st->host, st->counts, 2 * 64 * sizeof(long long), cudaMemcpyDeviceToHost, s));
  PKF_CU(cudaStreamSynchronize(s));
  const long long* hs = st->host;
  const long long* hr = st->host + 64;
  long long soff[9] = {0}, roff[9] = {0};
  for (int j = 0; j < w; ++j) {
    soff[j + 1] = soff[j] + hs[j];
    roff[j + 1] = roff[j] + hr[j];
  }
  PKF_NCCL(ncclGroupStart());
  for (int j = 0; j < w; ++j) {
    if (hs[j] > 0) PKF_NCCL(ncclSend(st->local + soff[j], (size_t)hs[j], ncclInt64, j, comm, s));
    if (hr[j] > 0) PKF_NCCL(ncclRecv(st->recv + roff[j], (size_t)hr[j], ncclInt64, j, comm, s));
  }
  PKF_NCCL(ncclGroupEnd());
  int rc = emb_gather_rows(in[1].data, st->recv, roff[w], row_bytes, st->rows, s);
  if (rc != 0) return rc;
  PKF_NCCL(ncclGroupStart());
  for (int j = 0; j < w; ++j) {
    if (hr[j] > 0) PKF_NCCL(ncclSend(st->rows + roff[j] * row_bytes, (size_t)(hr[j] * row_bytes), ncclUint8, j, comm, s));
    if (hs[j] > 0) PKF_NCCL(ncclRecv((char*)out[0].data + soff[j] * row_bytes, (size_t)(hs[j] * row_bytes), ncclUint8, j, comm, s));
  }
  PKF_NCCL(ncclGroupEnd());
  return 0;
}
