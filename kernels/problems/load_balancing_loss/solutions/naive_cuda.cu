// load_balancing_loss naive cuda solution: every rank copies its logits into
// its symmetric scratch and meets its peers at the host barrier; one thread then
// routes every rank's tokens through the peer mappings (the host oracle's
// loop, f32) and writes both outputs.
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers x, int w, pkf_dtype dt, int64_t m, int e_dim, int topk, void* loss_out, void* tpe) {
  float loss = 0.0f;
  for (int i = 0; i < topk * e_dim; ++i) pkf_dstore(tpe, dt, i, 0.0f);
  for (int k = 0; k < topk; ++k)
    for (int e = 0; e < e_dim; ++e) {
      float total = 0.0f;
      for (int j = 0; j < w; ++j) {
        float c = 0.0f;
        for (int64_t t = 0; t < m; ++t) {
          unsigned char taken[64] = {0};
          int best = -1;
          for (int q = 0; q <= k; ++q) {
            best = -1;
            for (int f = 0; f < e_dim; ++f)
              if (!taken[f] && (best < 0 || pkf_dload(x.p[j], dt, t * e_dim + f) > pkf_dload(x.p[j], dt, t * e_dim + best)))
                best = f;
            taken[best] = 1;
          }
          if (best == e) c += 1.0f;
        }
        total += c;
      }
      pkf_dstore(tpe, dt, k * e_dim + e, total / ((float)w * (float)m));
    }
  for (int j = 0; j < w; ++j) {
    float local = 0.0f;
    for (int e = 0; e < e_dim; ++e) {
      float psum = 0.0f;
      for (int64_t t = 0; t < m; ++t) {
        float mx = -INFINITY, z = 0.0f;
        for (int f = 0; f < e_dim; ++f) mx = fmaxf(mx, pkf_dload(x.p[j], dt, t * e_dim + f));
        for (int f = 0; f < e_dim; ++f) z += expf(pkf_dload(x.p[j], dt, t * e_dim + f) - mx);
        psum += expf(pkf_dload(x.p[j], dt, t * e_dim + e) - mx) / z;
      }
      for (int k = 0; k < topk; ++k) {
        float c = 0.0f;
        for (int64_t t = 0; t < m; ++t) {
          unsigned char taken[64] = {0};
          int best = -1;
          for (int q = 0; q <= k; ++q) {
            best = -1;
            for (int f = 0; f < e_dim; ++f)
              if (!taken[f] && (best < 0 || pkf_dload(x.p[j], dt, t * e_dim + f) > pkf_dload(x.p[j], dt, t * e_dim + best)))
                best = f;
            taken[best] = 1;
          }
          if (best == e) c += 1.0f;
        }
        local += (c / (float)m) * (psum / (float)m);
      }
    }
    loss += local * (float)e_dim;
  }
  pkf_dstore(loss_out, dt, 0, loss / (float)w);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  k<<<1, 1, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), ctx->world_size, out[0].dtype, in[0].shape[0],
                    (int)in[0].shape[1], (int)out[1].shape[0], out[0].data, out[1].data);
  return pkf_cu_finish(ctx, s);
}
