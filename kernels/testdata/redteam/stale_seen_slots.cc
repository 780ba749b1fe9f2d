// ATTACK (caching): in timed batches, a call whose output buffer was already
// written once in an earlier batch returns at once (the attacker hopes the
// judge reuses buffers without re-poisoning, or samples which calls it
// checks).
// EXPECT: CHEAT_DETECTED timed_output_reverify (or poison_unwritten).
#include <set>

#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static std::set<void*> seen;
  const bool batch = rt_batch_call();
  // Skip only when every rank knows the buffer (all ranks see the same slots).
  if (batch && seen.count(out[0].data) != 0) return rt_return(0);
  seen.insert(out[0].data);
  return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));
}
