// kjt_all2all naive cuda solution: every rank copies its jagged batch into its
// symmetric scratch and meets its peers at the host barrier; a single thread
// then walks the sources' lengths through the peer mappings (prefix sums
// included) and copies every value, then fills the tail with -1.
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers len, pkf_cu_peers val, int w, int fo, int ks, int64_t b, int64_t cap,
                  long long* len_out, long long* val_out, long long* stride, long long* per_rank) {
  long long written = 0;
  for (int f = 0; f < ks; ++f)
    for (int i = 0; i < w; ++i) {
      const long long* l = (const long long*)len.p[i];
      const long long* v = (const long long*)val.p[i];
      long long off = 0;
      for (int64_t q = 0; q < (fo + f) * b; ++q) off += l[q];
      for (int64_t s = 0; s < b; ++s) {
        const long long n = l[(fo + f) * b + s];
        len_out[((int64_t)f * w + i) * b + s] = n;
        for (long long x = 0; x < n; ++x) val_out[written + x] = v[off + x];
        written += n;
        off += n;
      }
    }
  for (int64_t q = written; q < cap; ++q) val_out[q] = -1;
  stride[0] = (long long)w * b;
  for (int i = 0; i < w; ++i) per_rank[i] = b;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int w = ctx->world_size, r = ctx->rank;
  int fo = 0;
  for (int j = 0; j < r; ++j) fo += 1 + j % 3;
  const int ks = 1 + r % 3;
  const int64_t b = out[0].shape[0] / (ks * w);
  k<<<1, 1, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), pkf_cu_peer_input(ctx, peer_in, 1), w, fo, ks, b,
                    out[1].shape[0], (long long*)out[0].data, (long long*)out[1].data, (long long*)out[2].data,
                    (long long*)out[3].data);
  return pkf_cu_finish(ctx, s);
}
