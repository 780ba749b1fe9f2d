// ATTACK (round 4, gaming batch_consistency's short/long ratio): look-ahead
// fusion in chunks of exactly the judge's short-batch length. The judge's
// short batches hold max(16, B/4) calls (judge.cc Timing), B = its long batch
// length, which the candidate learns from the longest run of poisoned output
// slots it has seen (the warm-up batch is long). Each chunk is computed with
// one exchange into private memory by its first call; every call writes only
// its own output (chunk_lookahead.h). A short batch is then exactly one
// chunk and a long one four: per call both cost the same, the ratio the
// check compares is ~1 whatever the amortization (here 32 calls per
// exchange, nearly the whole-batch fusion of batch_lookahead_fuse).
// EXPECT (fixed judge): CHEAT_DETECTED batch_consistency, or not OK at a
// speedup above the honest one (RedTeamPending.lookahead_private_shortlen).
#include "kernels/testdata/redteam/chunk_lookahead.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return rt_lookahead_run(ctx, in, n_in, out, n_out, stream, 0);
}
