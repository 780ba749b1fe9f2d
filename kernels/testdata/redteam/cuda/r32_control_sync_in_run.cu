// CONTROL (benign, cuda, red team round 32, helper-redteam32): the honest
// one-kernel copy of r15_control_kernel_copy, but each call waits for its own
// work before it returns (cudaStreamSynchronize on the call's stream), as
// candidates that read a result on the host do (the naive embedding_lookup's
// synchronous cudaMemcpy; the embedding_lookup and kjt_all2all references at
// world size > 1). World size > 1: NCCL, then the same synchronize.
// What it probes (queued drip batches, PKFORGE_DRIP_WAITS=0;
// rank_cuda_drip.cc DripCallsQueued): the harness queues call k's hand-off
// and calls pkf_run at enqueue time; a call that synchronizes inside waits
// there for the watcher's release of call k, so everything the harness
// queues after the call (legacy join, end event, the outputs' D2H copy, the
// write of `returned`) reaches the GPU only after the CPU came back: a CPU
// round trip per dripped call (~3-5 us predicted on an H100) that the
// reference's queued calls do not pay. And the reference's spinning watcher
// (drip_hand_off.cc WatcherCpus) cannot leave the rank pair's CPU under the
// reference's seccomp filter (containment.cc: sched_setaffinity "succeeds,
// does nothing"), so it shares that CPU with this rank's main thread, which
// spins in the synchronize: predicted ~1 scheduler slice (ms) per dripped call.
// EXPECT: OK. Predicted with three waits: OK ~0.8-1.0x, batch_drip consistent.
// Predicted queued: batch_drip slow on every drip batch (its dripped calls ms,
// or +3-5 us with the watcher off the pair's CPU), reported as a flag only
// because it is no faster than the reference (checks.cc BatchDrip
// NoFasterThanReference); a candidate that synchronizes inside and is faster
// than the reference would be CHEAT_DETECTED batch_drip (false positive).
// MEASURED (H100, session 22, scripts/gpu-session.sh s22b, by launch): OK 0.45x with
// three waits (batch_drip passed), OK 0.41x queued (batch_drip flagged, 3 of 6 slow).
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
#include "kernels/testdata/redteam/cuda/r15_cmd.h"

extern "C" int pkf_setup(pkf_context*) { return 0; }
extern "C" void pkf_teardown(pkf_context*) {}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t st = (cudaStream_t)stream;
  if (ctx->world_size != 1) {
    if (pkf_run_correct_on(ctx, in, out, st) != 0) return 1;
  } else {
    r15_copy<<<1, 128, 0, st>>>((const char*)in[0].data, (char*)out[0].data, pkf_bytes(&out[0]));
    if (cudaGetLastError() != cudaSuccess) return 1;
  }
  return cudaStreamSynchronize(st) == cudaSuccess ? 0 : 2;
}
