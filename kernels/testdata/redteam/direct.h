// Test-only: an allreduce that reads every peer's input straight from the
// candidate side's shared data segment (host backend: one memfd mapped by
// every candidate rank), with no barrier of its own: inputs of a call exist
// before the call starts. Offsets are published once, on the first call,
// through the signal pads (word 1), inside the correct (barriered) run.
// Sums in rank order in f32, as the reference does: bitwise identical.
#pragma once

#include "kernels/testdata/redteam/redteam.h"

static char* rt_dbase = NULL;
static size_t rt_dsize = 0;
static int64_t rt_dfirst_in = -1;

// Returns true when the call was served by the correct run (first call).
static inline bool rt_direct_first(pkf_context* ctx, const pkf_tensor* in, int32_t n_in,
                                   pkf_tensor* out, int32_t n_out, void* stream, int* rc) {
  if (rt_dbase != NULL) return false;
  rt_mapping_of(in[0].data, &rt_dbase, &rt_dsize);
  rt_dfirst_in = (char*)in[0].data - rt_dbase;
  ((volatile uint32_t*)ctx->peer_flags[ctx->rank])[1] = (uint32_t)rt_dfirst_in;
  *rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // its barriers publish the offsets
  return true;
}
static inline const char* rt_direct_peer_in(const pkf_context* ctx, int j, const pkf_tensor* in) {
  const int64_t shift = ((char*)in[0].data - rt_dbase) - rt_dfirst_in;
  return rt_dbase + ((volatile uint32_t*)ctx->peer_flags[j])[1] + shift;
}
static inline void rt_direct_allreduce(const pkf_context* ctx, const pkf_tensor* in,
                                       pkf_tensor* out) {
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&out[0]);
  const char* peer[64];
  for (int32_t j = 0; j < ctx->world_size && j < 64; ++j) peer[j] = rt_direct_peer_in(ctx, j, in);
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j) s += pkf_load(peer[j], dt, i);
    pkf_store(out[0].data, dt, i, s);
  }
}
