// ulysses_gather_seq_scatter_heads_qkv, independent implementation (from
// prompt.md): walk the output in order; output column s*C + c of position
// j*T + t comes from rank j, position t, column s*NH*D + r*C + c.
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
  const int64_t seq = in[0].shape[1], width = in[0].shape[2];
  const int64_t out_seq = out[0].shape[1], out_width = out[0].shape[2], slice = out_width / 3;
  const int64_t total = ind_numel(&out[0]);
  for (int64_t i = 0; i < total; ++i) {
    const int64_t col = i % out_width, pos = (i / out_width) % out_seq, b = i / (out_width * out_seq);
    const int64_t which = col / slice, c = col % slice, src_rank = pos / seq, t = pos % seq;
    const int64_t src_col = which * (width / 3) + ctx->rank * slice + c;
    memcpy((char*)out[0].data + i * es, (const char*)all[src_rank].data[0] + ((b * seq + t) * width + src_col) * es,
           (size_t)es);
  }
  return ind_done(ctx);
}
