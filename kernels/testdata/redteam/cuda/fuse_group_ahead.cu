// ATTACK (cuda, round 7, against 30f23c7; compiled here, NOT run: no GPU for
// helpers): whole-batch fusion that the progress probes can only find
// "ahead", which on cuda flags and never convicts.
//
// What the attacker read: since 30f23c7 (judge, cuda) a progress probe that
// finds the candidate behind convicts on cuda, one that finds it ahead only
// flags (progress_probe.cc JudgeProgress(ahead_convicts = false): ahead
// probes are not even counted as conclusive), because queued GPU work runs
// on while the calls are counted. batch_fuse_group (one NCCL group for the
// batch, enqueued by its first call) was OK at 12.45x with 3 of 4 probes
// behind on the H200: its group is most of the batch, so at 30-70% of the
// span nothing is complete yet. Here the group still comes first, and every
// later call of the batch enqueues a spin kernel of ~0.3 of an honest call's
// GPU time (measured with events on the first, honest, timed batch): the
// group completes in the first ~25% of the batch, so a probe at 30-50%
// finds every call done (ahead: a flag), one at 50-70% too (consistent).
// Nothing else looks: no drip batches on cuda; batch_consistency sees a
// short/long per-call ratio of ~1.6 (the padding is per call).
// Predicted: OK at ~2.5-3.5x the honest per-call NCCL candidate
// (control_nccl_per_call), batch_progress flagged "ahead" only.
// EXPECT (fixed judge): CHEAT_DETECTED batch_progress (or not OK above the
// honest candidate's speedup in the same test).
#include "kernels/testdata/redteam/cuda/batch_group.h"

static bg_state g;
static cudaEvent_t g_e0 = nullptr, g_e1 = nullptr;
static long long g_first_calls = 0;
static long long g_pad_cycles = -1;
// Padding per call, as a share of an honest call's GPU time.
static const double kPadShare = 0.3;

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t st = (cudaStream_t)stream;
  const bool fuse = bg_track(&g, in, out);
  int rc = 0;
  if (!fuse) {
    // The first timed batch (B not known yet) is honest and timed on the GPU.
    const bool first_batch = g.base != nullptr && g.batch == 0;
    if (first_batch && g_e0 == nullptr &&
        (cudaEventCreate(&g_e0) != cudaSuccess || cudaEventCreate(&g_e1) != cudaSuccess))
      return 21;
    if (first_batch && g.in_batch == 1) cudaEventRecord(g_e0, st);
    rc = pkf_run_correct_on(ctx, in, out, st);
    if (first_batch) {
      cudaEventRecord(g_e1, st);
      g_first_calls = g.in_batch;
    }
  } else {
    if (g_pad_cycles < 0) {
      float ms = 0.0f;
      int khz = 0;
      if (g_e1 == nullptr || cudaEventSynchronize(g_e1) != cudaSuccess ||
          cudaEventElapsedTime(&ms, g_e0, g_e1) != cudaSuccess ||
          cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, ctx->device) != cudaSuccess)
        return 22;
      const double call_ns = ms * 1e6 / (double)(g_first_calls > 0 ? g_first_calls : 1);
      g_pad_cycles = (long long)(kPadShare * call_ns * khz / 1e6);
    }
    if (g.in_batch == 1)
      rc = bg_group(ctx, &g, g.batch_start, g.batch, out, st);
    else
      pkf_spin<<<1, 1, 0, st>>>(g_pad_cycles);  // after the group, in stream order
    if (rc == 0 && cudaGetLastError() != cudaSuccess) rc = 23;
  }
  bg_returned(&g);
  return rc;
}
