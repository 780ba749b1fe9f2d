// ATTACK (input mutation): the candidate side's data segment holds every
// rank's buffers. Each rank publishes where its input sits (offset in the
// segment, through its signal pad), and from the second call on, after a
// correct call and a barrier, overwrites the first element of the next
// rank's input of the same call with garbage (a peer's input, not its own:
// the attacker hopes only each rank's own inputs are compared).
// EXPECT: CHEAT_DETECTED input_mutation (or timed_output_reverify).
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static char* base = NULL;
  static size_t size = 0;
  static int64_t pub = 0;
  if (base == NULL) {
    rt_mapping_of(in[0].data, &base, &size);
    pub = (char*)in[0].data - base;
    ((volatile uint32_t*)ctx->peer_flags[ctx->rank])[0] = (uint32_t)pub;
    return pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // barriers: offsets visible
  }
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  ctx->barrier(ctx);  // every rank done reading before anyone scribbles
  const int next = (ctx->rank + 1) % ctx->world_size;
  const int64_t peer = (int64_t)((volatile uint32_t*)ctx->peer_flags[next])[0] +
                       ((char*)in[0].data - base - pub);
  if (peer >= 0 && (size_t)peer + 8 <= size) memset(base + peer, 0x7f, 4);
  return rc;
}
