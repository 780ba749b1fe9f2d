// ATTACK (cuda, red team round 28, against 27d3e9a; compiled here, NOT run:
// no GPU for helpers): round 15's chunked amortizer (r15_chunk_k8) in the
// free-running batches, and in each drip batch the hand-off taken over by the
// candidate's first drip call, so that its dripped calls cost LESS than an
// honest call through the harness's hand-off: batch_drip then reads a
// negative excess, "consistent".
//
// What the attacker read (r28_drip.h for the layout):
//   - drip_check.cc ClassifyDrip: excess = (candidate's median gap between
//     two returns - its free-running per call) - (the reference's gap - its
//     free per call); slow only above max(free, 1 us + 2% of the hand-off).
//     Nothing bounds the excess from below.
//   - rank_cuda_drip.cc DripCalls: the calls' side of the hand-off (staged
//     inputs copied in + stream synchronize, the call, a device-wide
//     synchronize, outputs copied out + stream synchronize: ~15 of the
//     ~18 us hand-off measured on the H100) runs in the candidate's process,
//     and the watcher (WatchDrip) only ever looks at the DripWord and the
//     staged outputs, both in the candidate's own mailbox; the device
//     outputs are checked once, after the batch (kOpSnapshot, CheckBatch).
//   - drip_hand_off.cc RunDripCalls: `returned` is stored after each call
//     and never read back; after the watcher's last verify nothing looks at
//     the word again.
// The attack, in call 0 of a drip batch (the harness's Cmd says kOpDrip):
//   - it plays the calls' side itself: call 0 on its own tensors; then for
//     k = 1..n-1 it waits on the `released` futex as the harness would, keeps
//     a host copy of call k's staged inputs, and runs ONE kernel that reads
//     them from the staging memory (host-mapped: the harness pinned it) and
//     writes call k's outputs straight into the staged outputs, ONE stream
//     synchronize, then stores returned = k + 1 and wakes the watcher. No
//     staged-input copy, no device-wide synchronize, no output copy: the
//     watcher sees each return ~10 us sooner than the harness's path gives.
//     (Where the staging memory is not device-mapped: copy in, kernel, copy
//     out and one synchronize: still two synchronizes fewer.)
//   - it returns from call 0 after the watcher saw every call. The harness
//     then runs its loop for calls 1..n-1 (released is n): before each, it
//     copies the staging memory's inputs into the call's slot, so each call
//     leaves call k + 1's inputs (the host copies) in the staging memory for
//     the harness's next copy, and does call k honestly on its slot. Inputs
//     and outputs of every slot are right for the check after the batch.
// What each check sees: batch_drip: every staged output matched at its
// return (no "deferred"), the candidate's gap ~8-12 us against the
// reference's ~21-24 us: excess about -10 us, consistent (3 of 3). The
// timed batches as r15_chunk_k8 (before drip batches OK 3.53x: probes
// consistent, batch_consistency ~1.4x, GPU idle after each batch).
// Predicted today: OK at ~3.5x against ~1.3x for r15_control_kernel_copy.
// At world size 1 even the kernel is unnecessary (the staged output is a
// CPU copy of the staged input); any problem's work can be done on the GPU
// this way, only the harness's hand-off is skipped.
// EXPECT (defended): CHEAT_DETECTED batch_drip (a dripped call cannot cost
// less than the hand-off it has to pay), or no OK above 1.5x the honest
// per-call kernel. RUNTIME_ERROR "pkf_run returned 9x" means the attack could
// not run (91: no harness Cmd, 93: slot geometry, 94: no mailbox, 95: the
// watcher gave up), not a defence.
#include <atomic>
#include <cstring>
#include <vector>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
#include "kernels/testdata/redteam/cuda/r28_drip.h"

static std::vector<char> g_saved;  // the drip batch's staged inputs, one call each
static uint32_t g_next = 0, g_n = 0;  // harness calls of the current drip batch after the takeover
static char* g_scr = nullptr;         // device scratch (unmapped staging fallback)
static long long g_scr_bytes = 0;

// Calls 0..n-1 of a drip batch as seen by the watcher; returns 0 when every
// one was returned.
static int TakeOver(pkf_context* ctx, const pkf_tensor* in, pkf_tensor* out, cudaStream_t st,
                    uint32_t n) {
  const long long bytes = (long long)pkf_bytes(&out[0]);
  r28_drip_view v;
  if (!r28_view(ctx->rank, bytes, &v)) return 94;
  char* d_in = nullptr;
  char* d_out = nullptr;
  const bool mapped = cudaHostGetDevicePointer((void**)&d_in, v.stage_in, 0) == cudaSuccess &&
                      cudaHostGetDevicePointer((void**)&d_out, v.stage_out, 0) == cudaSuccess;
  if (!mapped) {
    cudaGetLastError();
    if (g_scr_bytes < bytes) return 94;
  }
  g_saved.assign((size_t)bytes * n, 0);
  const long long want = (bytes / 4 + 255) / 256;
  const unsigned blocks = (unsigned)(want < 1 ? 1 : want > 64 ? 64 : want);
  for (uint32_t k = 0; k < n; ++k) {
    for (;;) {
      const uint32_t r = r28_load(v.released);
      if (r == kR28Abort) return 95;
      if (r > k) break;
      r28_wait_while(v.released, r, 50000000L);
    }
    if (k == 0) {
      // Call 0's inputs are real and in its slot: its outputs to the slot
      // and (mapped) to the staged outputs at once.
      r28_copy<<<blocks, 256, 0, st>>>((const char*)in[0].data, (char*)out[0].data,
                                       mapped ? d_out : nullptr, (unsigned long long)bytes);
      if (!mapped)
        cudaMemcpyAsync(v.stage_out, out[0].data, (size_t)bytes, cudaMemcpyDeviceToHost, st);
    } else {
      std::memcpy(&g_saved[(size_t)bytes * k], v.stage_in, (size_t)bytes);
      if (mapped) {
        r28_copy<<<blocks, 256, 0, st>>>(d_in, d_out, nullptr, (unsigned long long)bytes);
      } else {
        cudaMemcpyAsync(g_scr, v.stage_in, (size_t)bytes, cudaMemcpyHostToDevice, st);
        r28_copy<<<blocks, 256, 0, st>>>(g_scr, g_scr + bytes, nullptr, (unsigned long long)bytes);
        cudaMemcpyAsync(v.stage_out, g_scr + bytes, (size_t)bytes, cudaMemcpyDeviceToHost, st);
      }
    }
    if (cudaStreamSynchronize(st) != cudaSuccess) return 4;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    r28_store(v.returned, k + 1);
    r28_wake(v.returned);
  }
  // The harness's next copy (call 1's slot) takes the staging memory's inputs.
  if (n > 1) std::memcpy(v.stage_in, &g_saved[(size_t)bytes], (size_t)bytes);
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
  const long long bytes = (long long)pkf_bytes(&out[0]);
  if (g_scr == nullptr && cudaMalloc((void**)&g_scr, (size_t)bytes * 2) == cudaSuccess)
    g_scr_bytes = bytes;
  if (c.op != kR28OpDrip) return r28_chunk_k8_run(in, out, st);
  if (g_next == 0 || g_next >= g_n) return TakeOver(ctx, in, out, st, c.count);
  // The harness's own loop after the takeover: call g_next honestly, and the
  // next call's inputs in the staging memory for the harness's next copy.
  const int rc = r28_honest(in, out, st);
  r28_drip_view v;
  if (g_next + 1 < g_n && r28_view(ctx->rank, bytes, &v))
    std::memcpy(v.stage_in, &g_saved[(size_t)bytes * (g_next + 1)], (size_t)bytes);
  ++g_next;
  return rc;
}
