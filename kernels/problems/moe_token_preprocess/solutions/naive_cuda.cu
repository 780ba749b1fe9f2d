// moe_token_preprocess naive cuda solution: every rank copies its routing into
// its symmetric scratch and meets its peers at the host barrier; one thread
// per output entry then counts the matching expert ids in the source rank's
// routing through the peer mappings.
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__device__ long long count_range(const long long* sel, int64_t n, long long lo, long long hi) {
  long long c = 0;
  for (int64_t k = 0; k < n; ++k) c += sel[k] >= lo && sel[k] < hi;
  return c;
}

__global__ void k(pkf_cu_peers sel, int64_t n, int w, int r, int el, long long* in_splits, long long* out_splits,
                  long long* per_local, long long* sum_local) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < w) {
    in_splits[t] = count_range((const long long*)sel.p[r], n, (long long)t * el, (long long)(t + 1) * el);
    out_splits[t] = count_range((const long long*)sel.p[t], n, (long long)r * el, (long long)(r + 1) * el);
  }
  if (t < w * el) {
    const long long x = (long long)r * el + t % el;
    per_local[t] = count_range((const long long*)sel.p[t / el], n, x, x + 1);
  }
  if (t < el) {
    long long s = 0;
    for (int i = 0; i < w; ++i) s += count_range((const long long*)sel.p[i], n, (long long)r * el + t, (long long)r * el + t + 1);
    sum_local[t] = s;
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int w = ctx->world_size, el = (int)out[3].shape[0];
  const int entries = w * el > w ? w * el : w;
  k<<<(entries + 255) / 256, 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), in[0].shape[0] * in[0].shape[1], w,
                                          ctx->rank, el, (long long*)out[0].data, (long long*)out[1].data,
                                          (long long*)out[2].data, (long long*)out[3].data);
  return pkf_cu_finish(ctx, s);
}
