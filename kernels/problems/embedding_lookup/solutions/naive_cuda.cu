// embedding_lookup naive cuda solution: every rank copies its inputs into its
// symmetric scratch and meets its peers at the host barrier; the indices are
// read back to the host, partitioned by owner there, and one thread per
// output element reads the owner's table through the peer mapping.
#include <vector>

#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers table, const long long* src, int64_t n_rows, int64_t n, int64_t m, void* y,
                  pkf_dtype dt) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_rows * n; i += (int64_t)gridDim.x * blockDim.x) {
    const long long v = src[i / n];
    pkf_dstore(y, dt, i, pkf_dload(table.p[v / m], dt, (v % m) * n + i % n));
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t n_idx = in[0].shape[0], m = in[1].shape[0], n = in[1].shape[1];
  std::vector<long long> idx(n_idx), order;
  PKF_CU(cudaMemcpy(idx.data(), in[0].data, n_idx * sizeof(long long), cudaMemcpyDeviceToHost));
  for (int j = 0; j < ctx->world_size; ++j)
    for (long long v : idx)
      if (v / m == j) order.push_back(v);
  long long* d_order = nullptr;
  PKF_CU(cudaMalloc(&d_order, n_idx * sizeof(long long)));
  PKF_CU(cudaMemcpyAsync(d_order, order.data(), n_idx * sizeof(long long), cudaMemcpyHostToDevice, s));
  k<<<pkf_cu_blocks(n_idx * n), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 1), d_order, n_idx, n, m,
                                             out[0].data, out[0].dtype);
  rc = pkf_cu_finish(ctx, s);
  cudaFree(d_order);
  return rc;
}
