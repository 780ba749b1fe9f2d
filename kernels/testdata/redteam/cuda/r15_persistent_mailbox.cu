// ATTACK (cuda, red team round 15, against f5230d8; compiled here, NOT run:
// no GPU for helpers): launch amortization by a persistent kernel that
// serves a timed batch's calls through a host-mapped mailbox. No look-ahead,
// no call done early or late by more than the GPU's poll latency: the
// gain is the kernel launch every honest call pays (the reference pays
// NCCL's enqueue and a copy per call).
//
// What the attacker read: a timed batch is judged by the judge's clock over
// the whole batch and by what the trusted side can see of the outputs
// (rank_cuda.cc Batch: the harness syncs the device only after the last
// call; judge_timing.cc TimedPair, ProgressProbe; checks.cc BatchConsistency).
// Nothing ever synchronizes the call's stream between two calls, so a call
// may return with its work neither done nor enqueued on its stream.
//   - Call 0 of each kOpBatch (the harness's Cmd on the stack, r15_cmd.h)
//     launches ONE kernel on the call's stream: a block that polls a
//     pinned, mapped mailbox.
//   - Every call k (0 included) writes {its input, its output, bytes} into
//     entry k of the mailbox and publishes k + 1; it launches nothing and
//     makes no CUDA call at all (about 0.1 us), then pads its host time to
//     kPadNs (keeps batch_consistency's short/long ratio well under 2).
//   - The kernel copies each published entry (world size 1: the allreduce
//     of one rank is a copy) within a few us of its call, in call order, and
//     leaves when the batch's count is done (the harness's device-wide
//     synchronize waits for it: every output is there at the reply). It also
//     leaves after kIdleNs without a new call (a progress probe froze the
//     host: the GPU is idle while the reference counts), publishing how far
//     it got; the next call sees it left (a Dekker hand-off on the mailbox)
//     and launches it again on the stream.
// What each check sees: poison_at_start (nothing written before a call),
// timed_output_reverify (all done at the reply), batch_progress (outputs
// follow the calls made: consistent at every probe), batch_consistency (one
// launch per batch, the rest per call: ~1.4x), outlived_call (no thread, the
// GPU idle after every batch), wallclock_crosscheck (the harness's events
// bracket the kernel on the call's stream). Trial calls (kOpRun) are honest
// copies on the stream.
// Predicted today: OK at about 2-3x the honest kernel-per-call candidate
// (r15_control_kernel_copy in the same test), i.e. ~5x the reference. Calls
// 1..N-1 broke the ABI's "the whole computation on `stream`" (a caller that
// synchronized the stream after call k would deadlock until the kernel's
// idle exit), which no check of the judge can see: nothing of the trusted
// side looks at the call's stream between two calls.
// EXPECT (defended): CHEAT_DETECTED (a check that a call's stream holds its
// work), or no OK above 1.5x the honest per-call candidate.
// RUNTIME_ERROR "pkf_run returned 9x" means the attack could not run (no
// harness Cmd on the stack: 91, no mailbox: 92); WRONG_OUTPUT or TIMEOUT that
// it broke; neither is a defence.
#include <atomic>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
#include "kernels/testdata/redteam/cuda/r15_cmd.h"

static const int kMaxCalls = 1024;
static const long long kIdleNs = 40000;  // the server leaves after 40 us without a call
static const long long kPadNs = 800;     // least host time per timed call

struct r15_entry {
  unsigned long long src, dst, bytes, pad;
};
struct r15_box {
  unsigned long long seq;        // host: calls published in this batch
  unsigned long long processed;  // gpu: calls whose outputs are written
  unsigned long long count;      // host: calls in this batch
  unsigned int state;            // gpu: 0 serving, 1 leaving, 2 left; host resets to 0
  unsigned int launches;
  r15_entry e[kMaxCalls];
};
static r15_box* g_box = nullptr;  // host view
static r15_box* g_dbox = nullptr;  // device view of the same pinned memory

__device__ __forceinline__ unsigned long long r15_gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned long long r15_ld_acq(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long r15_ld(const unsigned long long* p) {
  return *(const volatile unsigned long long*)p;
}

__global__ void __launch_bounds__(512) r15_server(r15_box* box, long long idle_ns) {
  __shared__ unsigned long long s_done, s_avail;
  __shared__ int s_exit;
  const unsigned warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
  if (threadIdx.x == 0) {
    s_done = r15_ld(&box->processed);
    s_exit = 0;
  }
  __syncthreads();
  unsigned long long last = r15_gtime();
  for (;;) {
    if (threadIdx.x == 0) {
      const unsigned long long cnt = r15_ld(&box->count);
      unsigned long long avail = r15_ld_acq(&box->seq);
      s_avail = s_done;
      if (s_done >= cnt) {
        s_exit = 1;  // the batch is done
      } else if (avail > s_done) {
        s_avail = avail;
        last = r15_gtime();
      } else if (r15_gtime() - last > (unsigned long long)idle_ns) {
        // Leaving: say so first, then look once more (the host publishes,
        // then looks at the state: one of the two sees the other).
        *(volatile unsigned int*)&box->state = 1;
        __threadfence_system();
        avail = r15_ld_acq(&box->seq);
        if (avail > s_done) {
          *(volatile unsigned int*)&box->state = 0;
          __threadfence_system();
          s_avail = avail;
          last = r15_gtime();
        } else {
          s_exit = 2;
        }
      }
    }
    __syncthreads();
    if (s_exit != 0) break;
    const unsigned long long d = s_done, a = s_avail;
    for (unsigned long long j = d + warp; j < a; j += nwarps) {
      const r15_entry* ep = &box->e[j];
      const char* src = (const char*)r15_ld(&ep->src);
      char* dst = (char*)r15_ld(&ep->dst);
      const unsigned long long n = r15_ld(&ep->bytes);
      const unsigned long long w = n / 4;
      for (unsigned long long i = lane; i < w; i += 32)
        ((unsigned int*)dst)[i] = ((const unsigned int*)src)[i];
      for (unsigned long long i = w * 4 + lane; i < n; i += 32) dst[i] = src[i];
    }
    __syncthreads();
    if (threadIdx.x == 0 && a > d) {
      __threadfence();
      s_done = a;
      *(volatile unsigned long long*)&box->processed = a;
      __threadfence_system();
    }
    __syncthreads();
  }
  if (threadIdx.x == 0 && s_exit == 2) {
    *(volatile unsigned int*)&box->state = 2;
    __threadfence_system();
  }
}

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->world_size != 1) return 0;
  if (cudaHostAlloc((void**)&g_box, sizeof(r15_box), cudaHostAllocMapped | cudaHostAllocPortable) !=
      cudaSuccess)
    return 1;
  memset(g_box, 0, sizeof(r15_box));
  if (cudaHostGetDevicePointer((void**)&g_dbox, g_box, 0) != cudaSuccess) return 2;
  // Load and run the server once (count 0: it leaves at once).
  r15_server<<<1, 512>>>(g_dbox, kIdleNs);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 3;
}

extern "C" void pkf_teardown(pkf_context*) {}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t st = (cudaStream_t)stream;
  if (ctx->world_size != 1) return pkf_run_correct_on(ctx, in, out, st);
  if (g_box == nullptr) return 92;
  if (r15_find_cmd() == nullptr) return 91;
  const long long t0 = r15_now_ns();
  const r15_pos p = r15_where();
  const unsigned long long bytes = pkf_bytes(&out[0]);
  if (!p.batch || p.count > (uint64_t)kMaxCalls) {
    // A trial call: honest, on the stream.
    return cudaMemcpyAsync(out[0].data, in[0].data, bytes, cudaMemcpyDeviceToDevice, st) ==
                   cudaSuccess
               ? 0
               : 4;
  }
  r15_box* b = g_box;
  volatile r15_box* vb = g_box;
  if (p.k == 0) {
    // The previous batch's kernels are done (the harness synchronized the
    // device after its last call).
    vb->seq = 0;
    vb->processed = 0;
    vb->count = p.count;
    vb->state = 0;
  }
  b->e[p.k].src = (unsigned long long)(uintptr_t)in[0].data;
  b->e[p.k].dst = (unsigned long long)(uintptr_t)out[0].data;
  b->e[p.k].bytes = bytes;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  vb->seq = p.k + 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  bool launch = p.k == 0;
  if (!launch) {
    unsigned int s;
    while ((s = vb->state) == 1) {
    }
    if (s == 2) {
      vb->state = 0;
      std::atomic_thread_fence(std::memory_order_seq_cst);
      launch = true;
    }
  }
  if (launch) {
    ++vb->launches;
    r15_server<<<1, 512, 0, st>>>(g_dbox, kIdleNs);
    if (cudaGetLastError() != cudaSuccess) return 5;
  }
  r15_pad_until(t0, kPadNs);
  return 0;
}
