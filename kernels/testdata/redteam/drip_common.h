// Test-only (round 8): where a call is in a drip batch, and the honest drip
// call, shared by the drip-aware attacks (the block they all repeated: the
// harness's Cmd on the rank's stack names the batch: kOpDrip = 19, its
// first slot and count; rt_find_cmd). New attacks include this; older ones
// (drip_starve_tick, drip_starve_two_chunk, drip_aware_fuse,
// worker_turns_fuse, probe_order_leak_fuse) keep their copies: they were
// measured as they are.
#pragma once
#include <vector>

#include "kernels/testdata/redteam/epoch_lookahead.h"

static const uint32_t kRtOpDrip = 19;

struct rt_drip_pos {
  bool drip = false;  // a call of a drip batch
  uint32_t k = 0;     // its index in the batch
  uint32_t count = 0;
  int64_t slot = -1;
};
// `s` must be initialised (rt_slots_init) for this call's tensors.
static inline rt_drip_pos rt_drip_where(const rt_slots* s, const pkf_tensor* in) {
  rt_drip_pos d;
  d.slot = rt_slot_of(s, in[0].data);
  if (d.slot < 0 || d.slot >= s->ring) return d;
  const volatile rt_cmd* cmd = rt_find_cmd(d.slot);
  if (cmd == NULL || cmd->op != kRtOpDrip) return d;
  d.drip = true;
  d.count = cmd->count;
  d.k = (uint32_t)((d.slot - (int64_t)cmd->slot + s->ring) % s->ring);
  return d;
}
// The honest call: one barrier-free epoch exchange for this slot alone.
static inline int rt_drip_honest_call(pkf_context* ctx, const rt_drip_pos& d, pkf_tensor* out) {
  const std::vector<int64_t> one{d.slot};
  return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
}
