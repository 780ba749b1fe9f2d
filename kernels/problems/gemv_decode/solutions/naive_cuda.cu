// gemv_decode naive cuda solution: every rank copies its inputs into its
// symmetric scratch and meets its peers at the host barrier; one thread per
// logit then reads the owning rank's weight row and bias through the peer
// mapping and computes the dot product (f32, from the bias, rounded once).
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(const void* hidden, pkf_cu_peers weight, pkf_cu_peers bias, int w, void* y, pkf_dtype dt,
                  int64_t t_n, int64_t h, int64_t v_n) {
  const int64_t n = t_n * w * v_n;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t t = i / (w * v_n), col = i % (w * v_n), v = col % v_n;
    const int j = (int)(col / v_n);
    float acc = pkf_dload(bias.p[j], dt, v);
    for (int64_t c = 0; c < h; ++c) acc += pkf_dload(hidden, dt, t * h + c) * pkf_dload(weight.p[j], dt, v * h + c);
    pkf_dstore(y, dt, i, acc);
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t t_n = in[0].shape[0], h = in[0].shape[1], v_n = in[1].shape[0];
  k<<<pkf_cu_blocks(pkf_cu_numel(&out[0])), 256, 0, s>>>(in[0].data, pkf_cu_peer_input(ctx, peer_in, 1),
                                                         pkf_cu_peer_input(ctx, peer_in, 2), ctx->world_size,
                                                         out[0].data, out[0].dtype, t_n, h, v_n);
  return pkf_cu_finish(ctx, s);
}
