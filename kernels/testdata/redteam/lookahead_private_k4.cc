// ATTACK (round 4, amortization in short chunks): look-ahead fusion of 4 calls
// at a time. Call i of a timed batch computes calls i..i+3 (those still in the
// batch: their outputs are still poison) with ONE exchange, keeps the other
// calls' results in PRIVATE memory (with a copy of their inputs) and writes
// only its own output; calls i+1..i+3 copy their cached result into their
// own output. Every output is written by its own call, nothing ahead of it
// (poison_at_start sees nothing), and the amortization (one barrier per 4
// calls instead of two per call) is the same in short and long batches, so
// batch_consistency's short/long ratio stays near 1 (chunk_lookahead.h).
// candidate.h: "Each call does its own work: work for several calls done
// together (one exchange for a whole batch ...) is detected".
// EXPECT (fixed judge): CHEAT_DETECTED batch_consistency, or not OK at a
// speedup above the honest one (RedTeamPending.lookahead_private_k4).
#include "kernels/testdata/redteam/chunk_lookahead.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return rt_lookahead_run(ctx, in, n_in, out, n_out, stream, 4);
}
