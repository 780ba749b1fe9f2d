// fused_adam_allgather naive cuda solution: every rank copies its inputs into
// its symmetric scratch and meets its peers at the host barrier; one thread per
// element of params recomputes that rank's Adam update from the peer's grad and
// master (read through the peer mappings); the local state is written too.
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers g, pkf_cu_peers w, int r, int nw, void* params, void* m_out, void* v_out, pkf_dtype dt,
                  int64_t p) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nw * p; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t j = i / p, e = i % p;
    const float gi = pkf_dload(g.p[j], dt, e);
    const float m = 0.1f * gi / 0.1f;  // m_hat: (1 - 0.9) g / (1 - 0.9)
    const float v = 0.001f * gi * gi;
    const float update = 1e-3f * (m / (sqrtf(v / 0.001f) + 1e-8f));
    pkf_dstore(params, dt, i, pkf_dload(w.p[j], dt, e) - update);
    if (j == r) {
      pkf_dstore(m_out, dt, e, 0.1f * gi);
      pkf_dstore(v_out, dt, e, v);
    }
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t p = in[0].shape[0];
  k<<<pkf_cu_blocks(ctx->world_size * p), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0),
                                                       pkf_cu_peer_input(ctx, peer_in, 1), ctx->rank, ctx->world_size,
                                                       out[0].data, out[1].data, out[2].data, out[0].dtype, p);
  return pkf_cu_finish(ctx, s);
}
