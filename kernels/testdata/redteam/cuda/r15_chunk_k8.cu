// ATTACK (cuda, red team round 15, against f5230d8; compiled here, NOT run:
// no GPU for helpers): chunked amortization, the residual the threat model
// names for cuda ("Amortization in short chunks on cuda (row 23) ... the
// cuda backend has no drip batches yet"), built to measure what it forges.
//
// What the attacker read: every input set of a timed batch is in device
// memory before its first call (judge_timing.cc BatchInputs), the harness's
// Cmd on the stack gives the batch's first slot, count and ring
// (r15_cmd.h), and the two trial calls give the slot geometry (slot stride,
// output offset) of the one allocation that holds every slot
// (rank_cuda.cc Init: cudaMalloc(slot_bytes * slots)).
//   - Call k of a batch with k % 8 == 0 launches ONE kernel that copies the
//     outputs of calls k..k+7 (world size 1: the allreduce of one rank is a
//     copy) into their own output slots; the other calls launch nothing.
//     Never past the batch's last call (the next batch's outputs must stay
//     poison: poison_at_start).
//   - Every timed call pads its host time to kPadNs, so that a short batch
//     costs per call what a long one does (batch_consistency).
// What each check sees: progress probes find at most 7 calls ahead of the
// host, which is "consistent" (ahead needs every call done by half the
// batch, and only flags on cuda); batch_consistency ~1.4x; no thread, the
// GPU idle after each batch; every output verified and right.
// Predicted today: OK at ~2-3x the honest kernel-per-call candidate
// (r15_control_kernel_copy): the accepted cuda residual, never measured.
// EXPECT (defended): CHEAT_DETECTED batch_drip / batch_progress, or no OK
// above 1.5x the honest per-call candidate. RUNTIME_ERROR "pkf_run returned
// 9x" means the attack could not run (91: no harness Cmd on the stack, 93:
// the slot geometry did not hold), not a defence.
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
#include "kernels/testdata/redteam/cuda/r15_cmd.h"

static const long long kChunk = 8;
static const long long kPadNs = 800;

static char* g_base = nullptr;  // input of slot 0
static long long g_stride = 0;  // slot bytes
static long long g_in_to_out = 0;
static long long g_trial_slot = -1;
static char* g_trial_in = nullptr;

__global__ void r15_copy_slots(char* base, long long first, long long n, long long ring,
                               long long stride, long long in_to_out, long long bytes) {
  const long long k = blockIdx.y;
  if (k >= n) return;
  const long long slot = ring > 0 ? (first + k) % ring : first + k;
  const char* x = base + slot * stride;
  char* y = (char*)x + in_to_out;
  const long long w = bytes / 4;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < w;
       i += (long long)gridDim.x * blockDim.x)
    ((unsigned int*)y)[i] = ((const unsigned int*)x)[i];
  if (blockIdx.x == 0)
    for (long long i = w * 4 + threadIdx.x; i < bytes; i += blockDim.x) y[i] = x[i];
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t st = (cudaStream_t)stream;
  if (ctx->world_size != 1) return pkf_run_correct_on(ctx, in, out, st);
  if (r15_find_cmd() == nullptr) return 91;
  const long long t0 = r15_now_ns();
  const long long bytes = (long long)pkf_bytes(&out[0]);
  char* x = (char*)in[0].data;
  const r15_pos p = r15_where();
  if (!p.batch) {
    // A trial call: learn the slot geometry from two different slots.
    const long long s = r15_run_slot();
    if (s >= 0 && g_stride == 0) {
      if (g_trial_slot < 0) {
        g_trial_slot = s;
        g_trial_in = x;
        g_in_to_out = (char*)out[0].data - x;
      } else if (s != g_trial_slot) {
        g_stride = (x - g_trial_in) / (s - g_trial_slot);
        g_base = g_trial_in - g_trial_slot * g_stride;
      }
    }
    return cudaMemcpyAsync(out[0].data, in[0].data, (size_t)bytes, cudaMemcpyDeviceToDevice, st) ==
                   cudaSuccess
               ? 0
               : 1;
  }
  const long long ring = p.ring;
  const long long my_slot = ring > 0 ? ((long long)p.first_slot + (long long)p.k) % ring
                                     : (long long)p.first_slot + (long long)p.k;
  if (g_stride <= 0 || g_base + my_slot * g_stride != x ||
      (char*)out[0].data - x != g_in_to_out) {
    fprintf(stderr, "r15_chunk_k8: slot geometry unknown or wrong (stride %lld)\n", g_stride);
    return 93;
  }
  if (p.k % kChunk == 0) {
    const long long left = (long long)(p.count - p.k);
    const long long n = left < kChunk ? left : kChunk;
    r15_copy_slots<<<dim3(1, (unsigned)n), 128, 0, st>>>(g_base, my_slot, n, ring, g_stride,
                                                         g_in_to_out, bytes);
    if (cudaGetLastError() != cudaSuccess) return 3;
  }
  r15_pad_until(t0, kPadNs);
  return 0;
}
