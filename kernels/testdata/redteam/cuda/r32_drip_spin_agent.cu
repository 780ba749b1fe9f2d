// ATTACK (cuda, red team round 32, the lead against the queued drip
// batches, PKFORGE_DRIP_WAITS=0; run on a GPU with both modes): round 28's
// takeover (r28_drip_agent) made to fit either hand-off, to measure the
// least a dripped call can cost when the candidate plays the calls' side
// itself, against the harness's path:
//   - the takeover in call 0 of a drip batch SPINS on `released` (a queued
//     batch's watcher spins too and wakes no futex) and does each call with
//     ONE kernel reading the staged inputs and writing the staged outputs
//     through host-mapped memory, one stream synchronize, then stores
//     returned = k + 1 (and wakes a futex sleeper, for the futex hand-off);
//   - the harness's own calls after the takeover (replayed in either mode:
//     with three waits one after another, queued all at once before the GPU
//     runs them) copy whatever the staging memory holds into their slot
//     first, so each replayed call copies its saved inputs back into its
//     slot on the stream (after the harness's copy) and does the call: the
//     slots' inputs and outputs are right for the check after the batch.
// The free-running batches are round 15's r15_chunk_k8 (amortized over 8
// calls: ~1.8 us a call against ~3 us for the honest kernel).
// What it measures: its dripped calls are the least a takeover costs; the
// room a padded takeover has to hide amortized work in is the harness's
// hand-off floor less that (drip_check.h kShort).
// EXPECT (defended): CHEAT_DETECTED batch_drip, or no OK above 1.5x the
// honest per-call kernel. RUNTIME_ERROR "pkf_run returned 9x": the attack
// could not run (91: no harness Cmd, 93: slot geometry, 94: no mailbox or
// unmapped staging, 95: the watcher gave up).
#include <atomic>
#include <cstring>
#include <vector>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
#include "kernels/testdata/redteam/cuda/r28_drip.h"

static std::vector<char> g_saved;     // the batch's inputs, one call each
static uint32_t g_next = 0, g_n = 0;  // replayed harness calls after the takeover

static int TakeOver(pkf_context* ctx, const pkf_tensor* in, pkf_tensor* out, cudaStream_t st,
                    uint32_t n) {
  const long long bytes = (long long)pkf_bytes(&out[0]);
  r28_drip_view v;
  if (!r28_view(ctx->rank, bytes, &v)) return 94;
  char* d_in = nullptr;
  char* d_out = nullptr;
  if (cudaHostGetDevicePointer((void**)&d_in, v.stage_in, 0) != cudaSuccess ||
      cudaHostGetDevicePointer((void**)&d_out, v.stage_out, 0) != cudaSuccess) {
    cudaGetLastError();
    return 94;
  }
  g_saved.assign((size_t)bytes * n, 0);
  const long long want = (bytes / 4 + 255) / 256;
  const unsigned blocks = (unsigned)(want < 1 ? 1 : want > 64 ? 64 : want);
  const long long deadline = r15_now_ns() + 20'000'000'000LL;
  for (uint32_t k = 0; k < n; ++k) {
    for (;;) {
      const uint32_t r = r28_load(v.released);
      if (r == kR28Abort || r15_now_ns() > deadline) return 95;
      if (r > k) break;
    }
    if (k == 0) {
      r28_copy<<<blocks, 256, 0, st>>>((const char*)in[0].data, (char*)out[0].data, d_out,
                                       (unsigned long long)bytes);
    } else {
      std::memcpy(&g_saved[(size_t)bytes * k], v.stage_in, (size_t)bytes);
      r28_copy<<<blocks, 256, 0, st>>>(d_in, d_out, nullptr, (unsigned long long)bytes);
    }
    if (cudaStreamSynchronize(st) != cudaSuccess) return 4;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    r28_store(v.returned, k + 1);
    r28_wake(v.returned);
  }
  g_next = 1;
  g_n = n;
  return 0;
}

extern "C" int pkf_setup(pkf_context*) { return 0; }
extern "C" void pkf_teardown(pkf_context*) {}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t st = (cudaStream_t)stream;
  if (ctx->world_size != 1) return pkf_run_correct_on(ctx, in, out, st);
  if (r15_find_cmd() == nullptr) return 91;
  const r15_cmd c = r28_cmd_now();
  if (c.op != kR28OpDrip) return r28_chunk_k8_run(in, out, st);
  if (g_next == 0 || g_next >= g_n) return TakeOver(ctx, in, out, st, c.count);
  // A replayed call: its inputs back into its slot (the harness copied the
  // staging memory's last ones there), then the call.
  const long long bytes = (long long)pkf_bytes(&out[0]);
  if (cudaMemcpyAsync(in[0].data, &g_saved[(size_t)bytes * g_next], (size_t)bytes,
                      cudaMemcpyHostToDevice, st) != cudaSuccess)
    return 4;
  ++g_next;
  return r28_honest(in, out, st);
}
