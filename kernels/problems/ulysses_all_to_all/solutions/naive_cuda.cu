// ulysses_all_to_all naive cuda solution: y[m, j*N + n] = x_j[r*M/world + m, n].
// Every rank copies its inputs into its symmetric scratch, meets its peers at
// the host barrier and then reads their inputs through the peer mappings
// (one thread per output element).
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers x, int r, int w, void* y, pkf_dtype dt, int64_t rows, int64_t n) {
  const int64_t total = rows * w * n;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t m = i / (w * n), rest = i % (w * n), j = rest / n, c = rest % n;
    pkf_dstore(y, dt, i, pkf_dload(x.p[j], dt, (r * rows + m) * n + c));
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t rows = out[0].shape[0], n = in[0].shape[1];
  k<<<pkf_cu_blocks(pkf_cu_numel(&out[0])), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), ctx->rank, ctx->world_size,
                                                         out[0].data, out[0].dtype, rows, n);
  return pkf_cu_finish(ctx, s);
}
