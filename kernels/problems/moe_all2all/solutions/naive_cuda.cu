// moe_all2all naive cuda solution: y block i = rows [r*chunk, r*chunk + mine)
// of rank i's x. Every rank copies its inputs into its symmetric scratch, meets
// its peers at the host barrier and then reads their rows through the peer
// mappings (one thread per output element).
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers x, int64_t first_row, int64_t mine, void* y, pkf_dtype dt, int64_t n, int64_t total) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t src = i / (mine * n), rest = i % (mine * n);
    pkf_dstore(y, dt, i, pkf_dload(x.p[src], dt, first_row * n + rest));
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t m = in[0].shape[0], n = in[0].shape[1], chunk = m / ctx->world_size;
  const int64_t mine = out[0].shape[0] / ctx->world_size, total = pkf_cu_numel(&out[0]);
  k<<<pkf_cu_blocks(total), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), ctx->rank * chunk, mine, out[0].data,
                                         out[0].dtype, n, total);
  return pkf_cu_finish(ctx, s);
}
