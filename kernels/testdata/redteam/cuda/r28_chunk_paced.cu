// ATTACK (cuda, red team round 28, against 27d3e9a; compiled here, NOT run:
// no GPU for helpers): r15_chunk_k8 with its free-running calls padded from
// ~1.3 to ~1.8 us a call, and its drip calls one small kernel (the fastest
// honest single call): it keeps about half of the amortization gain and
// stays under batch_drip's limit, which is never below its own free time.
//
// What the attacker read: drip_check.cc ClassifyDrip,
//   limit = max(cand_free_us, cuda ? 0.02 * handoff + 1.0 : ...)
// i.e. on cuda the "1 us + 2% of the hand-off" allowance (1.36 us at the
// H100's ~18 us hand-off, calibrated on honest excesses of -0.4..+0.6 us)
// only applies while the candidate's free-running time is below it; above,
// the host backend's "a call alone may cost up to twice its free-running
// time" rule applies. A chunked amortizer whose free-running call costs F
// and whose honest single call costs S is slow only when S - F > F, i.e. a
// forged speedup of up to S / F = 2 over its own single calls passes.
// Measured on the H100 (s20b/s20c): an honest single copy kernel reads
// ~3.0-3.3 us in a drip batch beyond the hand-off (r15_control_kernel_copy,
// free 3.03 us, excess -0.14..+0.56); r15_chunk_k8 (pad 0.8 us) free 1.33 us.
// The attack: kPadNs 1300 (free ~1.8 us: the pad plus ~0.5 us of harness
// loop), drip calls = r15_control_kernel_copy's kernel.
// What each check sees: batch_drip: S (free + excess of the honest kernel,
// s20b) 2.9-3.6 us, so excess ~1.1-1.8 us against a limit of
// max(1.8, 1.36) = 1.8: consistent (a single slow batch of 3 is only a
// flag; kPadNs 1500 leaves more margin at exactly 1.5x the honest kernel);
// batch_consistency ~1.4x (as r15_chunk_k8); probes consistent; GPU idle
// after each batch.
// Predicted today: OK at ~2.0x the reference (3.6 / 1.8), ~1.6-1.7x the
// honest per-call kernel (r15_control_kernel_copy, 1.22-1.35x).
// EXPECT (defended): CHEAT_DETECTED batch_drip, or no OK above 1.5x the
// honest per-call kernel (R15Expect). RUNTIME_ERROR "pkf_run returned 9x":
// the attack could not run (91: no harness Cmd, 93: slot geometry).
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
#include "kernels/testdata/redteam/cuda/r28_drip.h"

static const long long kPadNs = 1300;

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t st = (cudaStream_t)stream;
  if (ctx->world_size != 1) return pkf_run_correct_on(ctx, in, out, st);
  if (r15_find_cmd() == nullptr) return 91;
  const r15_cmd c = r28_cmd_now();
  if (c.op == kR28OpDrip) return r28_honest_kernel(in, out, st);
  return r28_chunk_k8_run(in, out, st, kPadNs);
}
