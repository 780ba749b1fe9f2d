// ATTACK (cuda, round 8, against 77734a9; compiled here, NOT run: no GPU for
// helpers): secondary_context_hog's kernel in a second context, but started
// only AFTER the judge's idle probe, by a delay the GPU itself keeps.
//
// What the attacker read: since 77734a9 the idle probes (checks.cc
// IdleCheck: an empty kernel on the reference's context right after the
// snapshot of each candidate batch, judge_timing.cc ~:455) must have a
// median under 1 ms. A kernel of another context time-slices with the
// probe's; a COPY does not (copy engines have their own runlists). So at the
// last call of each timed batch (batch_group.h: batches are back-to-back
// calls; B known after the first batch) the candidate enqueues, in a second
// context (cuCtxCreate through dlsym, as secondary_context_hog): a host-to-
// device copy of kDelayBytes from pinned memory (~0.6 ms at ~55 GB/s: no SM
// work, the idle probe right after the batch sees an idle compute engine),
// then a bounded hog kernel (every SM, %globaltimer for kHogNs = 3 ms). When
// the reference's timed batch follows the candidate's (the pair's secret
// order: about half of the pairs), its kernels time-slice with the hog.
// The calls themselves are honest (pkf_run_correct_on); the hog ends long
// before the candidate's next batch and the next idle probe.
// Predicted: outlived_call passes (idle median ~20 us, the copy's engine is
// not the probe's), the reference's batches after a candidate-first batch
// 1.3-1.6x slower, OK at ~1.1-1.4x for the reference's own algorithm;
// a larger kHogNs (up to the 5 ms batch target) or a delay tuned per order
// (the candidate reads the pair order from the reference's GPU activity)
// more. Idle probe placed after the candidate's batch, never before the
// reference's: a probe right before each reference batch (or one in the
// middle of it, on the reference's context) would see the hog.
// EXPECT (fixed judge): CHEAT_DETECTED outlived_call, or OK at a speedup
// below 1.2x (the reference's own algorithm).
#include <dlfcn.h>

#include "kernels/testdata/redteam/cuda/batch_group.h"

typedef int (*ctx_create_fn)(void** ctx, unsigned flags, int dev);
typedef int (*ctx_pop_fn)(void** ctx);
typedef int (*ctx_push_fn)(void* ctx);

static const size_t kDelayBytes = size_t{32} << 20;
static const unsigned long long kHogNs = 3'000'000;
static bg_state g;
static void* g_ctx2 = nullptr;
static cudaStream_t g_side;
static char* g_host = nullptr;
static char* g_dev = nullptr;
static cudaEvent_t g_done = nullptr;
static bool g_worked = false;
static ctx_push_fn g_push = nullptr;
static ctx_pop_fn g_pop = nullptr;

__device__ static unsigned long long GlobalNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__global__ void bounded_hog(unsigned long long ns) {
  const unsigned long long t0 = GlobalNs();
  while (GlobalNs() - t0 < ns) {
  }
}

extern "C" int pkf_setup(pkf_context* ctx) {
  void* cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cu == nullptr) cu = dlopen("libcuda.so.1", RTLD_NOW);
  if (cu == nullptr) return 0;
  auto create = (ctx_create_fn)dlsym(cu, "cuCtxCreate_v2");
  g_push = (ctx_push_fn)dlsym(cu, "cuCtxPushCurrent_v2");
  g_pop = (ctx_pop_fn)dlsym(cu, "cuCtxPopCurrent_v2");
  if (create == nullptr || g_push == nullptr || g_pop == nullptr) return 0;
  if (create(&g_ctx2, 0, ctx->device) != 0 || g_ctx2 == nullptr) return 0;
  const bool ok = cudaStreamCreateWithFlags(&g_side, cudaStreamNonBlocking) == cudaSuccess &&
                  cudaHostAlloc((void**)&g_host, kDelayBytes, cudaHostAllocPortable) == cudaSuccess &&
                  cudaMalloc((void**)&g_dev, kDelayBytes) == cudaSuccess &&
                  cudaEventCreateWithFlags(&g_done, cudaEventDisableTiming) == cudaSuccess;
  void* popped = nullptr;
  g_pop(&popped);
  g_worked = ok;
  return 0;
}

extern "C" void pkf_teardown(pkf_context*) {
  if (g_ctx2 != nullptr && g_push(g_ctx2) == 0) {
    cudaStreamSynchronize(g_side);
    void* popped = nullptr;
    g_pop(&popped);
  }
}

// The chain in the second context: the copy (delay), then the hog.
static void LaunchDelayedHog(int sms) {
  if (g_push(g_ctx2) != 0) return;
  if (cudaEventQuery(g_done) == cudaSuccess) {  // none still queued
    cudaMemcpyAsync(g_dev, g_host, kDelayBytes, cudaMemcpyHostToDevice, g_side);
    bounded_hog<<<sms > 0 ? sms : 132, 64, 0, g_side>>>(kHogNs);
    cudaEventRecord(g_done, g_side);
  }
  void* popped = nullptr;
  g_pop(&popped);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  if (!g_worked) return 0;  // no second context: outputs stay poison
  const bool timed = bg_track(&g, in, out);
  const int rc = pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
  if (timed && g.in_batch == g.batch) LaunchDelayedHog(ctx->num_sms);
  bg_returned(&g);
  return rc;
}
