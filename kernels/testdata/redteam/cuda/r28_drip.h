// Test-only (cuda, red team round 28, against 27d3e9a): what a candidate rank
// can see of the cuda drip batches, and round 15's chunked amortizer
// (r15_chunk_k8) for the free-running batches the r28 attacks amortize.
//
// What the attacker read:
//   - rank_cuda.cc Main: the command being executed is the `Cmd cmd` above
//     pkf_run's frame (r15_cmd.h finds it at the first trial call); a drip
//     batch is op kOpDrip (19), its first slot and count in the same places.
//   - shm.h: the candidate side's mailbox is ONE memfd mapping named
//     "pkf-cand-data" (rank_pool_start.cc), read-write in every candidate
//     rank: rank r's DripWord {released, returned} at kCudaMailboxDripOffset
//     (4096) + r * 64, its staging memory at kCudaMailboxStageOffset (8192)
//     + r * stage_bytes: one call's inputs (each 256-aligned), then its
//     outputs (layout.cc CudaDripStageBytes). The harness pinned that
//     staging memory with cudaHostRegister in this process (rank_cuda_drip.cc
//     AllocateDrip).
//   - drip_hand_off.cc: the watcher (reference rank r) sleeps on a shared
//     futex on `returned` and wakes the calls' side with a shared futex on
//     `released`; RunDripCalls is harness code in THIS process.
#pragma once

#include <climits>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernels/testdata/redteam/cuda/r15_cmd.h"

static const uint32_t kR28OpDrip = 19;
static const uint32_t kR28Abort = 0x7fffffffu;  // protocol.h kDripAbort
static const long long kR28DripOffset = 4096, kR28StageOffset = 8192;

// The harness's command right now (op, slot, count), or op 0 when not found.
static inline r15_cmd r28_cmd_now() {
  r15_cmd c;
  memset(&c, 0, sizeof c);
  const volatile r15_cmd* p = r15_find_cmd();
  if (p == NULL) return c;
  c.op = p->op;
  c.slot = p->slot;
  c.count = p->count;
  c.ring = p->ring;
  return c;
}

// The harness's mapping of the candidate side's mailbox, or NULL.
static inline char* r28_mailbox() {
  static char* found = NULL;
  static bool searched = false;
  if (searched) return found;
  searched = true;
  FILE* f = fopen("/proc/self/maps", "r");
  if (f == NULL) return NULL;
  char line[512];
  while (fgets(line, sizeof line, f) != NULL) {
    unsigned long long a = 0, b = 0, off = 1;
    if (sscanf(line, "%llx-%llx %*s %llx", &a, &b, &off) != 3) continue;
    if (off == 0 && strstr(line, "pkf-cand-data") != NULL) {
      found = (char*)(uintptr_t)a;
      break;
    }
  }
  fclose(f);
  fprintf(stderr, "r28: candidate mailbox %s\n", found != NULL ? "found" : "NOT found");
  return found;
}

static inline long long r28_up256(long long v) { return (v + 255) / 256 * 256; }
// Staging bytes per rank (allreduce: one input, one output of `bytes` each).
static inline long long r28_stage_bytes(long long bytes) {
  return (r28_up256(bytes) + r28_up256(bytes) + 4095) / 4096 * 4096;
}

struct r28_drip_view {
  volatile uint32_t* released;
  volatile uint32_t* returned;
  char* stage_in;
  char* stage_out;
};
static inline bool r28_view(int rank, long long bytes, r28_drip_view* v) {
  char* mb = r28_mailbox();
  if (mb == NULL) return false;
  v->released = (volatile uint32_t*)(mb + kR28DripOffset + rank * 64);
  v->returned = v->released + 1;
  v->stage_in = mb + kR28StageOffset + rank * r28_stage_bytes(bytes);
  v->stage_out = v->stage_in + r28_up256(bytes);
  return true;
}

// The harness's own hand-off primitives (shm.cc WaitWhileEquals, WakeAll):
// shared (not private) futexes on the mailbox words.
static inline void r28_wait_while(volatile uint32_t* w, uint32_t v, long ns) {
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
  syscall(SYS_futex, (uint32_t*)w, FUTEX_WAIT, v, &ts, NULL, 0);
}
static inline void r28_wake(volatile uint32_t* w) {
  syscall(SYS_futex, (uint32_t*)w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
static inline uint32_t r28_load(volatile uint32_t* w) {
  return __atomic_load_n((uint32_t*)w, __ATOMIC_ACQUIRE);
}
static inline void r28_store(volatile uint32_t* w, uint32_t v) {
  __atomic_store_n((uint32_t*)w, v, __ATOMIC_RELEASE);
}

// The takeovers' copy (r28_drip_agent, r32_drip_spin_agent): n bytes from
// src to dst and, when dst2 is not null, to dst2 too (a grid-stride loop of
// 32-bit words, the tail bytes by block 0).
static __global__ void r28_copy(const char* src, char* dst, char* dst2, unsigned long long n) {
  const unsigned long long w = n / 4;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < w;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const unsigned int v = ((const unsigned int*)src)[i];
    ((unsigned int*)dst)[i] = v;
    if (dst2 != nullptr) ((unsigned int*)dst2)[i] = v;
  }
  if (blockIdx.x == 0)
    for (unsigned long long i = w * 4 + threadIdx.x; i < n; i += blockDim.x) {
      dst[i] = src[i];
      if (dst2 != nullptr) dst2[i] = src[i];
    }
}

// ---- round 15's r15_chunk_k8 (the free-running amortizer), unchanged in
// substance: call k % 8 == 0 of a timed batch copies the outputs of calls
// k..k+7 (world 1: the allreduce of one rank is a copy), the others launch
// nothing; host time padded to kR28PadNs per timed call. Measured on the H100
// (2026-12-05): OK 3.53x against 1.35x for the honest per-call kernel before
// drip batches; since them (s20c) CHEAT_DETECTED batch_drip at +2.1..7.6 us
// of excess a dripped call (allowance 1.36 us).
static const long long kR28Chunk = 8;
static const long long kR28PadNs = 800;
static char* g_r28_base = nullptr;
static long long g_r28_stride = 0, g_r28_in_to_out = 0, g_r28_trial_slot = -1;
static char* g_r28_trial_in = nullptr;

__global__ void r28_copy_slots(char* base, long long first, long long n, long long ring,
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

// The honest call (trials, drip calls the attack does not take over): the
// copy as r15_chunk_k8's trial calls make it.
static inline int r28_honest(const pkf_tensor* in, pkf_tensor* out, cudaStream_t st) {
  return cudaMemcpyAsync(out[0].data, in[0].data, pkf_bytes(&out[0]), cudaMemcpyDeviceToDevice,
                         st) == cudaSuccess
             ? 0
             : 1;
}
// The honest call as one small kernel (r15_control_kernel_copy's body, the
// fastest honest single call measured: 3.03 us free-running on the H100).
static inline int r28_honest_kernel(const pkf_tensor* in, pkf_tensor* out, cudaStream_t st) {
  r15_copy<<<1, 128, 0, st>>>((const char*)in[0].data, (char*)out[0].data, pkf_bytes(&out[0]));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

// A trial call (kOpRun) or a timed batch's call (kOpBatch), as r15_chunk_k8;
// `pad_ns`: the least host time of a timed call.
static inline int r28_chunk_k8_run(const pkf_tensor* in, pkf_tensor* out, cudaStream_t st,
                                   long long pad_ns = kR28PadNs) {
  const long long t0 = r15_now_ns();
  const long long bytes = (long long)pkf_bytes(&out[0]);
  char* x = (char*)in[0].data;
  const r15_pos p = r15_where();
  if (!p.batch) {
    const long long s = r15_run_slot();
    if (s >= 0 && g_r28_stride == 0) {
      if (g_r28_trial_slot < 0) {
        g_r28_trial_slot = s;
        g_r28_trial_in = x;
        g_r28_in_to_out = (char*)out[0].data - x;
      } else if (s != g_r28_trial_slot) {
        g_r28_stride = (x - g_r28_trial_in) / (s - g_r28_trial_slot);
        g_r28_base = g_r28_trial_in - g_r28_trial_slot * g_r28_stride;
      }
    }
    return r28_honest(in, out, st);
  }
  const long long ring = p.ring;
  const long long my_slot = ring > 0 ? ((long long)p.first_slot + (long long)p.k) % ring
                                     : (long long)p.first_slot + (long long)p.k;
  if (g_r28_stride <= 0 || g_r28_base + my_slot * g_r28_stride != x ||
      (char*)out[0].data - x != g_r28_in_to_out) {
    fprintf(stderr, "r28: slot geometry unknown or wrong (stride %lld)\n", g_r28_stride);
    return 93;
  }
  if (p.k % kR28Chunk == 0) {
    const long long left = (long long)(p.count - p.k);
    const long long n = left < kR28Chunk ? left : kR28Chunk;
    r28_copy_slots<<<dim3(1, (unsigned)n), 128, 0, st>>>(g_r28_base, my_slot, n, ring,
                                                         g_r28_stride, g_r28_in_to_out, bytes);
    if (cudaGetLastError() != cudaSuccess) return 3;
  }
  r15_pad_until(t0, pad_ns);
  return 0;
}
