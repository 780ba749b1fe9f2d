// ATTACK (cuda, red team round 15, against f5230d8; compiled here, NOT run:
// no GPU for helpers): a copy-engine hog that never stops, in a second
// context of the candidate's: a CUDA graph whose WHILE node (condition set to
// 1 at every launch, never cleared) loops over four 16 MiB device-to-device
// copies for as long as the process lives. Made in pkf_setup, launched by
// the first call of the first timed batch (so the trial calls, from which
// the judge sizes the batches, run beside no hog), fed by nothing after
// that. It uses no SM, so no check built on an empty kernel sees it.
//
// What the attacker read:
//   - Every GPU check of "work outside the call" times an EMPTY KERNEL in the
//     reference's context (rank_cuda.cc Idle, LaunchDelay; checks.cc
//     IdleCheck after each candidate batch, ReferenceIdleProbe around each
//     reference batch, IdleLatencyVerdict over them) or a device-wide
//     synchronize in the candidate's PRIMARY context (checks.cc
//     OutlivedCheck kOpSync), which a second context escapes
//     (secondary_context_hog, H200 2026-12-05: only the idle probe saw it).
//     Copy engines are not the compute engine: an empty kernel does not wait
//     for another context's copies.
//   - At world size 1 the reference is ncclAllReduce of one rank, which NCCL
//     does as a cudaMemcpyAsync device-to-device (NCCL enqueue.cc:
//     nRanks == 1 -> ncclLaunchOneRank -> ncclCudaMemcpyAsync for a sum): the
//     reference's timed work IS copy-engine work, queued behind (or
//     time-sliced with) the hog's copies, and slowed by their memory traffic.
//     The subtracted round trip (ProbeRoundTrip: a context switch and an
//     empty kernel) is not slowed.
//   - The candidate's own calls are one small copy KERNEL each (SMs, the
//     body of r15_control_kernel_copy), which the hog does not queue.
// Predicted today: OK with a forged speedup (the reference's copies wait
// behind the hog's), well above r15_control_kernel_copy's; or, where the
// copy engines time-slice contexts coarsely, a judge so slowed by its own
// snapshots and comparisons (each has small copies) that the phase runs
// out: TIMEOUT, or HARNESS_ERROR when one reference round outlasts its 5 s
// minimum past the deadline. Neither the idle probes nor kOpSync nor the
// output digests can see the hog. Where copies of different contexts
// neither queue nor time-slice, OK near r15_control_kernel_copy (then this
// is no hole).
// EXPECT (defended): CHEAT_DETECTED outlived_call (e.g. an idle probe that
// also times a small device-to-device copy), or OK within 1.5x of the
// honest kernel-per-call candidate; never HARNESS_ERROR. RUNTIME_ERROR
// "pkf_run returned 9x" means the attack could not run (94: no second
// context or graph), not a defence.
#include <dlfcn.h>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
#include "kernels/testdata/redteam/cuda/r15_cmd.h"

typedef int (*ctx_create_fn)(void** ctx, unsigned flags, int dev);
typedef int (*ctx_pop_fn)(void** ctx);
typedef int (*ctx_push_fn)(void* ctx);

static bool g_ready = false, g_started = false;
static void* g_ctx2 = nullptr;
static cudaStream_t g_s2 = nullptr;
static cudaGraphExec_t g_exec = nullptr;
static ctx_push_fn g_push = nullptr;
static ctx_pop_fn g_pop = nullptr;
static long long g_calls = 0;
static const size_t kPiece = 16u << 20;
static const int kPieces = 4;

static bool MakeHog(pkf_context* ctx) {
  void* cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cu == nullptr) cu = dlopen("libcuda.so.1", RTLD_NOW);
  if (cu == nullptr) return false;
  auto create = (ctx_create_fn)dlsym(cu, "cuCtxCreate_v2");
  g_pop = (ctx_pop_fn)dlsym(cu, "cuCtxPopCurrent_v2");
  g_push = (ctx_push_fn)dlsym(cu, "cuCtxPushCurrent_v2");
  if (create == nullptr || g_pop == nullptr || g_push == nullptr) return false;
  // cuCtxCreate makes the new context current: the runtime calls below use it.
  if (create(&g_ctx2, 0, ctx->device) != 0 || g_ctx2 == nullptr) return false;
  bool ok = true;
  char *a = nullptr, *b = nullptr;
  cudaGraph_t g = nullptr;
  cudaGraphConditionalHandle h = 0;
  ok = ok && cudaMalloc(&a, kPiece * kPieces) == cudaSuccess &&
       cudaMalloc(&b, kPiece * kPieces) == cudaSuccess &&
       cudaMemset(a, 1, kPiece * kPieces) == cudaSuccess &&
       cudaStreamCreateWithFlags(&g_s2, cudaStreamNonBlocking) == cudaSuccess &&
       cudaGraphCreate(&g, 0) == cudaSuccess &&
       cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault) == cudaSuccess;
  cudaGraphNode_t loop = nullptr;
  // (no default constructor: a union inside; all zero is its documented start)
  alignas(cudaGraphNodeParams) unsigned char raw[sizeof(cudaGraphNodeParams)];
  memset(raw, 0, sizeof raw);
  cudaGraphNodeParams& cp = *reinterpret_cast<cudaGraphNodeParams*>(raw);
  cp.type = cudaGraphNodeTypeConditional;
  cp.conditional.handle = h;
  cp.conditional.type = cudaGraphCondTypeWhile;
  cp.conditional.size = 1;
  ok = ok && cudaGraphAddNode(&loop, g, nullptr, nullptr, 0, &cp) == cudaSuccess;
  if (ok) {
    cudaGraph_t body = cp.conditional.phGraph_out[0];
    for (int i = 0; i < kPieces && ok; ++i) {
      cudaGraphNode_t m = nullptr;
      ok = cudaGraphAddMemcpyNode1D(&m, body, nullptr, 0, b + i * kPiece, a + i * kPiece, kPiece,
                                    cudaMemcpyDeviceToDevice) == cudaSuccess;
    }
  }
  // Uploaded now, so that its launch inside a call creates nothing (the
  // judge counts threads against the count after pkf_setup).
  ok = ok && cudaGraphInstantiate(&g_exec, g, 0) == cudaSuccess &&
       cudaGraphUpload(g_exec, g_s2) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess;
  if (!ok) fprintf(stderr, "r15_ce_hog_loop: no hog (%s)\n", cudaGetErrorString(cudaGetLastError()));
  void* popped = nullptr;
  g_pop(&popped);  // back to the primary context for the harness and the calls
  return ok;
}

// Launched once, from inside a call (the harness's primary context is
// current there): ~10-20 us of the first timed (warm-up) batch.
static bool StartHog() {
  if (g_push(g_ctx2) != 0) return false;
  const bool ok = cudaGraphLaunch(g_exec, g_s2) == cudaSuccess;
  void* popped = nullptr;
  g_pop(&popped);
  return ok;
}

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->world_size == 1) g_ready = MakeHog(ctx);
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  if (ctx->world_size != 1) return pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
  if (!g_ready) return 94;
  ++g_calls;
  // The first timed call: the harness's Cmd says kOpBatch (r15_cmd.h); were
  // it not found, the call after the trials' (2 trials + the rerun).
  if (!g_started && (r15_where().batch || (r15_find_cmd() == nullptr && g_calls > 3))) {
    if (!StartHog()) return 95;
    g_started = true;
  }
  r15_copy<<<1, 128, 0, (cudaStream_t)stream>>>((const char*)in[0].data, (char*)out[0].data,
                                                pkf_bytes(&out[0]));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
