// Test-only (cuda, red team round 15): the rank harness's own command, read
// from the candidate rank's stack, and where the current call is in its batch.
//
// What the attacker read (kernels/cuda/rank_cuda.cc): CudaRank::Main keeps
// the command it executes in a local `Cmd cmd` whose address escapes into
// ReadFull, so it lives in memory above pkf_run's frame for as long as the
// command runs (Run for a trial call, Batch for a timed batch, which calls
// pkf_run `count` times back to back). Its layout is protocol.h's Cmd:
// magic "PKF1", op (kOpRun 3, kOpBatch 11), first slot, count, ring. The cuda
// backend has no drip batches, so every kOpBatch is an ordinary batch whose
// calls all run (a progress probe only pauses it).
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct r15_cmd {
  uint32_t magic, op, slot, count, ring, flags;
  uint64_t seed;
};
static const uint32_t kR15Magic = 0x504b4631u, kR15OpRun = 3, kR15OpBatch = 11;

static inline long long r15_now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// The mapping of /proc/self/maps that holds `p` (the main thread's stack).
static inline bool r15_mapping_of(const char* p, char** lo, char** hi) {
  FILE* f = fopen("/proc/self/maps", "r");
  if (f == NULL) return false;
  char line[512];
  bool found = false;
  while (fgets(line, sizeof line, f) != NULL) {
    unsigned long long a = 0, b = 0;
    if (sscanf(line, "%llx-%llx", &a, &b) != 2) continue;
    if ((unsigned long long)(uintptr_t)p >= a && (unsigned long long)(uintptr_t)p < b) {
      *lo = (char*)(uintptr_t)a;
      *hi = (char*)(uintptr_t)b;
      found = true;
      break;
    }
  }
  fclose(f);
  return found;
}

// The harness's Cmd: the first one above this frame (searched once; Main's
// frame, and so its address, never changes). NULL when not found.
static inline const volatile r15_cmd* r15_find_cmd() {
  static const volatile r15_cmd* found = NULL;
  static bool searched = false;
  if (searched) return found;
  searched = true;
  char* here = (char*)__builtin_frame_address(0);
  char *lo = NULL, *hi = NULL;
  if (!r15_mapping_of(here, &lo, &hi)) return NULL;
  char* end = here + (64 << 10) < hi ? here + (64 << 10) : hi;
  for (char* p = (char*)((uintptr_t)here & ~(uintptr_t)7); p + sizeof(r15_cmd) <= end; p += 4) {
    const r15_cmd* c = (const r15_cmd*)p;
    if (c->magic != kR15Magic || (c->op != kR15OpRun && c->op != kR15OpBatch)) continue;
    if (c->count < 1 || c->count > 1024 || c->ring > 1024) continue;
    found = c;
    fprintf(stderr, "r15: harness Cmd found %lld bytes above pkf_run's frame (op %u slot %u)\n",
            (long long)(p - here), c->op, c->slot);
    break;
  }
  return found;
}

// Where this call is: in a timed batch (k of count) or not (a trial call).
struct r15_pos {
  bool batch;
  uint64_t k, count;
  uint32_t first_slot, ring;
};
static inline r15_pos r15_where() {
  static uint64_t done = 0, cur = 0;
  r15_pos p;
  memset(&p, 0, sizeof p);
  const volatile r15_cmd* c = r15_find_cmd();
  if (c == NULL || c->op != kR15OpBatch) return p;
  if (cur == 0 || done >= cur) {  // the previous batch's calls all ran: a new batch
    cur = c->count;
    done = 0;
  }
  p.batch = true;
  p.k = done++;
  p.count = cur;
  p.first_slot = c->slot;
  p.ring = c->ring;
  return p;
}
// The slot of a trial call (kOpRun), or -1.
static inline long long r15_run_slot() {
  const volatile r15_cmd* c = r15_find_cmd();
  return c != NULL && c->op == kR15OpRun ? (long long)c->slot : -1;
}

// Busy-waits until `ns` passed since `t0` (host time per call).
static inline void r15_pad_until(long long t0, long long ns) {
  while (r15_now_ns() - t0 < ns) {
  }
}

// World size 1: the allreduce of one rank is a copy.
__global__ void r15_copy(const char* src, char* dst, unsigned long long n) {
  const unsigned long long w = n / 4;
  const unsigned int* s4 = (const unsigned int*)src;
  unsigned int* d4 = (unsigned int*)dst;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < w;
       i += (unsigned long long)gridDim.x * blockDim.x)
    d4[i] = s4[i];
  for (unsigned long long i = w * 4 + threadIdx.x; i < n; i += blockDim.x)
    if (blockIdx.x == 0) dst[i] = src[i];
}
