// ulysses_gather_heads_scatter_seq, independent implementation (from
// prompt.md): walk the output in order and find each element's source
// (rank = head / NH, position = this rank's sequence block + t).
#include <string.h>

#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const int64_t es = ind_elem_bytes(in[0].dtype);
  const int64_t seq = in[0].shape[1], heads = in[0].shape[2], dim = in[0].shape[3];
  const int64_t out_seq = out[0].shape[1], out_heads = out[0].shape[2];
  const int64_t total = ind_numel(&out[0]);
  for (int64_t i = 0; i < total; ++i) {
    const int64_t d = i % dim, hh = (i / dim) % out_heads, t = (i / (dim * out_heads)) % out_seq;
    const int64_t b = i / (dim * out_heads * out_seq);
    const int64_t src_rank = hh / heads, h = hh % heads, pos = ctx->rank * out_seq + t;
    memcpy((char*)out[0].data + i * es,
           (const char*)all[src_rank].data[0] + (((b * seq + pos) * heads + h) * dim + d) * es, (size_t)es);
  }
  return ind_done(ctx);
}
