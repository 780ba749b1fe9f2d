// ATTACK (cuda, red team round 28, against 27d3e9a; compiled here, NOT run:
// no GPU for helpers): round 15's chunked amortizer (r15_chunk_k8) in the
// free-running batches, honest calls in the drip batches, and the
// REFERENCE's own drip batch slowed by GPU work of the candidate's that
// starts exactly when a drip batch is armed: the hand-off read off the
// reference (its drip less its free-running time) becomes milliseconds, and
// every drip batch of the candidate reads "consistent".
//
// What the attacker read (r28_drip.h for the layout):
//   - judge_timing.cc DripPair: kOpGen with kGenDrip (the reference rank
//     arms the candidate's DripWord in the candidate's mailbox: released = 1,
//     rank_cuda.cc kOpGen -> ArmCandidateDrip), then the reference's
//     free-running batch (s.ref_free_us; the smaller of it and the timed
//     batches' fastest is used), then the reference's own drip batch
//     (SelfDrip: its gap between returns is s.ref_service_us), then the
//     candidate's. Unlike TimedPair, DripPair sends no idle probe
//     (ReferenceIdleProbe) around the reference's batches and no idle check
//     after the candidate's: nothing looks at the GPU while the reference's
//     drip runs, and the candidate is frozen only on the CPU.
//   - drip_check.cc ClassifyDrip: handoff = ref_service - ref_free, unbounded
//     above; a larger hand-off only widens the allowance (2% of it).
//   - checks.cc IdleCheck / ReferenceIdleProbe: a KERNEL of another context
//     makes the judge's empty kernel wait a time slice; a context whose only
//     work is a stream waiting on a memory value runs no kernel.
// The attack:
//   - pkf_setup creates a second context (as secondary_context_hog; the
//     rank's device-wide synchronizes cover only the primary one), registers
//     the page of the candidate side's drip words in it (device-mapped), and
//     queues on a stream of it: cuStreamWaitValue32(released == 1), then a
//     one-block kernel that polls `released` and spins until it changes
//     (the candidate's own drip batch released its call 1), at most 300 ms.
//   - released becomes 1 only when a drip batch is armed (it is 0 before the
//     first, n after each): the kernel starts while the judge runs the
//     reference's free-running batch and own drip batch, and the GPU
//     time-slices the reference's every copy and kernel with it (a few ms a
//     drip call instead of ~21 us). It ends at the candidate's call 1, which
//     queues the next wait and kernel for the next drip batch.
// What each check sees: batch_drip: the reference's drip ms a call, its free
// batch by the timed batches' fastest (~3.6 us), hand-off ms; the
// candidate's honest dripped calls ~22 us: excess about -ms, consistent, 3
// of 3 (drips_settled: settled early). Idle checks after each timed batch and
// around the reference's timed batches: only a pending stream wait in the
// second context (predicted: no time slice taken, probes ~20 us). The timed
// batches as r15_chunk_k8 (OK 3.53x before drip batches).
// Predicted today: OK at ~3.5x against ~1.3x for r15_control_kernel_copy.
// If a pending stream wait does take time slices: CHEAT_DETECTED
// outlived_call (idle median over 1 ms), as secondary_context_hog.
// EXPECT (defended): CHEAT_DETECTED outlived_call (an idle probe around the
// reference's drip batch) or batch_drip, or no OK above 1.5x the honest
// per-call kernel. RUNTIME_ERROR "pkf_run returned 9x" means the attack could
// not run (91: no harness Cmd, 93: slot geometry, 96: no second context,
// no mailbox or no stream memory operations), not a defence.
#include <dlfcn.h>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
#include "kernels/testdata/redteam/cuda/r28_drip.h"

typedef int (*r28_ctx_create_fn)(void** ctx, unsigned flags, int dev);
typedef int (*r28_ctx_push_fn)(void* ctx);
typedef int (*r28_ctx_pop_fn)(void** ctx);
typedef int (*r28_wait_value_fn)(void* stream, unsigned long long addr, unsigned value,
                                 unsigned flags);
static const unsigned kR28WaitEq = 0x1;  // CU_STREAM_WAIT_VALUE_EQ
static const unsigned long long kR28HogCapNs = 300000000ull;

static void* g_ctx2 = nullptr;
static r28_ctx_push_fn g_push = nullptr;
static r28_ctx_pop_fn g_pop = nullptr;
static r28_wait_value_fn g_wait = nullptr;
static cudaStream_t g_side = nullptr;
static unsigned int* g_d_released = nullptr;  // device view (second context)
static volatile uint32_t* g_h_released = nullptr;
static volatile uint32_t* g_h_returned = nullptr;
static bool g_ok = false;
static bool g_rearmed = false;  // this drip batch queued the next wait

__device__ static unsigned long long r28_gns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// Runs while the drip batch that started it is armed but the candidate's
// call 1 not yet released: the reference's free batch and own drip batch.
__global__ void r28_hog(const volatile unsigned int* released, unsigned long long cap_ns) {
  const unsigned long long t0 = r28_gns();
  while (*released == 1u && r28_gns() - t0 < cap_ns) __nanosleep(2000);
}

// In the second context: wait for the next arming, then the hog.
static bool Arm() {
  if (g_push(g_ctx2) != 0) return false;
  bool ok = g_wait(g_side, (unsigned long long)(uintptr_t)g_d_released, 1u, kR28WaitEq) == 0;
  if (ok) {
    r28_hog<<<1, 32, 0, g_side>>>(g_d_released, kR28HogCapNs);
    ok = cudaGetLastError() == cudaSuccess;
  }
  void* popped = nullptr;
  g_pop(&popped);
  return ok;
}

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->world_size != 1) return 0;
  void* cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cu == nullptr) cu = dlopen("libcuda.so.1", RTLD_NOW);
  if (cu == nullptr) return 0;
  auto create = (r28_ctx_create_fn)dlsym(cu, "cuCtxCreate_v2");
  g_push = (r28_ctx_push_fn)dlsym(cu, "cuCtxPushCurrent_v2");
  g_pop = (r28_ctx_pop_fn)dlsym(cu, "cuCtxPopCurrent_v2");
  g_wait = (r28_wait_value_fn)dlsym(cu, "cuStreamWaitValue32_v2");
  if (g_wait == nullptr) g_wait = (r28_wait_value_fn)dlsym(cu, "cuStreamWaitValue32");
  if (create == nullptr || g_push == nullptr || g_pop == nullptr || g_wait == nullptr) return 0;
  char* mb = r28_mailbox();
  if (mb == nullptr) return 0;
  if (create(&g_ctx2, 0, ctx->device) != 0 || g_ctx2 == nullptr) return 0;
  // create() made it current: register the drip words' page in it.
  char* page = mb + kR28DripOffset;
  g_h_released = (volatile uint32_t*)(page + ctx->rank * 64);
  g_h_returned = g_h_released + 1;
  bool ok = cudaStreamCreateWithFlags(&g_side, cudaStreamNonBlocking) == cudaSuccess &&
            cudaHostRegister(page, 4096, cudaHostRegisterMapped | cudaHostRegisterPortable) ==
                cudaSuccess &&
            cudaHostGetDevicePointer((void**)&g_d_released, (void*)g_h_released, 0) == cudaSuccess;
  void* popped = nullptr;
  g_pop(&popped);
  g_ok = ok && Arm();
  fprintf(stderr, "r28_drip_ref_hog: second context %s\n", g_ok ? "armed" : "FAILED");
  cudaGetLastError();
  return 0;
}

extern "C" void pkf_teardown(pkf_context*) {}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t st = (cudaStream_t)stream;
  if (ctx->world_size != 1) return pkf_run_correct_on(ctx, in, out, st);
  if (r15_find_cmd() == nullptr) return 91;
  const r15_cmd c = r28_cmd_now();
  if (c.op == kR15OpBatch && !g_ok) return 96;
  if (c.op != kR28OpDrip) return r28_chunk_k8_run(in, out, st);
  if (g_h_returned == nullptr) return r28_honest(in, out, st);
  // A drip call: honest. Call 0 (nothing returned yet) starts a batch; from
  // call 1 on, the hog has seen released change: queue the next one.
  if (r28_load(g_h_returned) == 0) {
    g_rearmed = false;
  } else if (!g_rearmed && g_ok) {
    g_rearmed = true;
    if (!Arm()) return 96;
  }
  return r28_honest(in, out, st);
}
