// ATTACK (cuda, red team round 32, helper-redteam32: source review of the
// queued drip batches, PKFORGE_DRIP_WAITS=0, uncommitted on top of 50809a4).
// What it read:
//   - rank_cuda_drip.cc DripCallsQueued: for call k the harness queues on
//     `stream` a cuStreamWaitValue32(released >= k + 1), the staged inputs'
//     H2D copy, two joins with the legacy stream, the call, the outputs' D2H
//     copy and cuStreamWriteValue32(returned = k + 1); every pkf_run of the
//     batch is called at enqueue time, before the GPU ran call 0.
//   - AllocateQueuedDrip: the drip word's page is registered with
//     cudaHostRegisterMapped in THIS process (so cudaHostGetDevicePointer of
//     the word works here too), the staging memory with cudaHostRegister.
//   - drip_hand_off.cc WatchDrip(kSpin): the watcher polls `returned` and
//     stores `released`, never a futex; it only sees when `returned` moves.
// The attack: call 0 of a drip batch launches ONE persistent kernel (one
// block) on the call's stream that plays the calls' side of the whole batch
// on the GPU: it polls `released` in host-mapped memory, reads the staged
// inputs zero-copy, writes the staged outputs zero-copy, fences, and stores
// returned = k + 1; optionally padded (R32_PAD_NS after it saw the release,
// on %globaltimer). It saves each call's inputs in device memory, so the
// harness's calls 1..n-1, queued behind it, put their own inputs back into
// their slot (after the harness's H2D of the last staged inputs) and do the
// call: slots right for the check after the batch. No CPU, no copy engine,
// no event, no legacy join, no launch per call: the least a dripped call can
// cost through host memory (two PCIe round trips and the watcher's CPU
// work). The timed batches are r15_chunk_k8's amortizer (~1.3-1.8 us a call
// against ~3 us honest).
// What to read from it (TimingDiag "drip N:" lines): its dripped per call
// against the reference's "hand-off without its call" (the kShort floor):
// the floor less this agent's dripped call is the room a padded takeover
// has to hide amortized work (R32_PAD_NS: r32_drip_gpu_agent_pad.cu).
// Only in queued mode: with the futex hand-off (waits 1-3) the drip word is
// not mapped for the GPU and the calls go through the harness honestly (the
// amortizer then reads slow, as r15_chunk_k8).
// EXPECT (defended, unpadded): CHEAT_DETECTED batch_drip ("shorter than its
// hand-off"; predicted dripped call ~2.5-5 us on an H100 against a floor of
// ~6-10 us). Padded to the floor: OK ~3.5x (round 30 finding 1, not closed
// by queuing). RUNTIME_ERROR "pkf_run returned 9x": the attack could not run
// (91: no harness Cmd, 93: no save buffer, 94: no mailbox / unmapped staging,
// 95: the watcher gave up or the kernel's time limit).
// MEASURED (H100, session 22, s22b): with three waits CHEAT_DETECTED batch_drip (its
// free-running amortizer, the calls through the harness: slow); queued CHEAT_DETECTED
// input_mutation (drip batch 0: its replay left ~13.6 kB of inputs changed), i.e. the
// attack's own bug: the least dripped call it was written to show was not measured.
#include <cstring>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
#include "kernels/testdata/redteam/cuda/r28_drip.h"

#ifndef R32_PAD_NS
#define R32_PAD_NS 0
#endif

static char* g_save = nullptr;  // device: each dripped call's inputs (for the replay)
static long long g_save_bytes = 0;
static int* g_status = nullptr;  // device: the agent kernel's failure code
static uint32_t g_next = 0, g_n = 0;

__device__ __forceinline__ unsigned long long r32_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One block. Thread 0 polls the word; all threads copy.
__global__ void r32_gpu_agent(const char* in0, char* out0, const char* st_in, char* st_out,
                              unsigned int* released, unsigned int* returned, char* save,
                              unsigned long long bytes, unsigned int n, long long pad_ns,
                              unsigned long long limit_ns, int* status) {
  __shared__ int go;
  const unsigned long long t_start = r32_now();
  const unsigned long long w = bytes / 4;
  for (unsigned int k = 0; k < n; ++k) {
    if (threadIdx.x == 0) {
      go = 1;
      for (;;) {
        const unsigned int r = __ldcv(released);
        if (r == kR28Abort) {
          go = 0;
          break;
        }
        if (r > k) break;
        if (r32_now() - t_start > limit_ns) {
          go = 0;
          break;
        }
      }
    }
    __syncthreads();
    if (!go) {
      if (threadIdx.x == 0) *status = 95;
      return;
    }
    const unsigned long long t_rel = r32_now();
    const unsigned int* src = (const unsigned int*)(k == 0 ? in0 : st_in);
    unsigned int* dst = (unsigned int*)st_out;
    unsigned int* keep = (unsigned int*)(k == 0 ? out0 : save + (unsigned long long)k * bytes);
    for (unsigned long long i = threadIdx.x; i < w; i += blockDim.x) {
      const unsigned int v = k == 0 ? src[i] : __ldcv(src + i);
      dst[i] = v;
      keep[i] = v;
    }
    if (threadIdx.x == 0)
      for (unsigned long long i = w * 4; i < bytes; ++i) {
        const char v = ((const volatile char*)(k == 0 ? in0 : st_in))[i];
        st_out[i] = v;
        ((char*)keep)[i] = v;
      }
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0) {
      if (pad_ns > 0)
        while ((long long)(r32_now() - t_rel) < pad_ns) {
        }
      __threadfence_system();
      *(volatile unsigned int*)returned = k + 1;
      __threadfence_system();
    }
    __syncthreads();
  }
}

static int TakeOver(pkf_context* ctx, const pkf_tensor* in, pkf_tensor* out, cudaStream_t st,
                    uint32_t n) {
  const long long bytes = (long long)pkf_bytes(&out[0]);
  if (g_save == nullptr || (long long)n * bytes > g_save_bytes) return 93;
  r28_drip_view v;
  if (!r28_view(ctx->rank, bytes, &v)) return 94;
  char* d_in = nullptr;
  char* d_out = nullptr;
  unsigned int* d_rel = nullptr;
  if (cudaHostGetDevicePointer((void**)&d_rel, (void*)v.released, 0) != cudaSuccess) {
    // Not queued (the harness did not map its drip word): honest calls.
    cudaGetLastError();
    g_next = 0;
    return r28_honest(in, out, st);
  }
  if (cudaHostGetDevicePointer((void**)&d_in, v.stage_in, 0) != cudaSuccess ||
      cudaHostGetDevicePointer((void**)&d_out, v.stage_out, 0) != cudaSuccess) {
    cudaGetLastError();
    return 94;
  }
  r32_gpu_agent<<<1, 256, 0, st>>>((const char*)in[0].data, (char*)out[0].data, d_in, d_out,
                                   d_rel, d_rel + 1, g_save, (unsigned long long)bytes, n,
                                   (long long)R32_PAD_NS, 20'000'000'000ULL, g_status);
  if (cudaGetLastError() != cudaSuccess) return 4;
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
  const long long bytes = (long long)pkf_bytes(&out[0]);
  if (g_save == nullptr) {
    // A trial call (before any drip batch): room for a drip batch's inputs.
    g_save_bytes = 64LL * bytes;  // protocol.h kDripCalls is 32
    if (cudaMalloc((void**)&g_save, (size_t)g_save_bytes) != cudaSuccess ||
        cudaMalloc((void**)&g_status, sizeof(int)) != cudaSuccess) {
      cudaGetLastError();
      g_save = nullptr;
    }
  }
  const r15_cmd c = r28_cmd_now();
  if (c.op != kR28OpDrip) return r28_chunk_k8_run(in, out, st);
  if (g_next == 0 || g_next >= g_n) return TakeOver(ctx, in, out, st, c.count);
  // A replayed call, queued behind the agent kernel and the harness's copy
  // of the last staged inputs into this slot: its own inputs back, the call.
  if (cudaMemcpyAsync(in[0].data, g_save + (size_t)bytes * g_next, (size_t)bytes,
                      cudaMemcpyDeviceToDevice, st) != cudaSuccess)
    return 4;
  ++g_next;
  return r28_honest(in, out, st);
}
