// ATTACK (cuda, red team round 28, against 27d3e9a; compiled here, NOT run:
// no GPU for helpers): blame. r28_drip_ref_hog's trigger (a stream of a
// second context waiting on the candidate's drip word, released == 1, which
// the reference rank writes when it arms a drip batch while the candidate is
// frozen) in front of a COPY-ENGINE hog instead of a kernel: kCopies
// device-to-device copies of kCopyBytes each (~100 GB of copying, about a
// minute), queued in pkf_setup. The calls are honest (NCCL, the reference's
// own algorithm).
//
// What the attacker read:
//   - judge_timing.cc DripPair: right after the arming come two rounds of
//     the REFERENCE ranks only (its free-running batch, its own drip batch,
//     SelfDrip), with no idle probe; rank_pool.cc Collect gives a reference
//     round max(phase deadline, now + 5 s) and a reference rank that gives
//     no reply by then is a HarnessFault ("reference ranks ... gave no
//     reply"): HARNESS_ERROR. SelfDrip's own watcher gives up after --timeout
//     (WatchDrip limit_ms) and that reply is kRcHarness too.
//   - The reference's drip batch is copy-engine work: per call a staged
//     inputs' copy host-to-device, NCCL's one-rank allreduce (a device-to-
//     device cudaMemcpyAsync at world size 1), the outputs' copy back; 2
//     copies a call before (golden outputs, stash), ~160 copies in all.
//   - r15_ce_hog_loop (H100, 2026-12-05): a never-ending copy-engine hog in
//     a second context made the timing phase run out (TIMEOUT), i.e. copies
//     of other contexts crawl beside it; there it started at the first timed
//     call and the phase ended in a candidate round. Started by the drip
//     arming, the first rounds to crawl are the reference's.
// Predicted today: HARNESS_ERROR (the reference's drip batch round outlives
// the phase deadline) where copies of other contexts wait behind a running
// copy; where the copy engines time-slice finely, the reference's drip is
// only slowed (r28_drip_ref_hog's effect: drip batches consistent) and the
// verdict is OK near the reference (honest calls) or TIMEOUT.
// EXPECT (defended): never HARNESS_ERROR; CHEAT_DETECTED outlived_call (the
// GPU busy around the reference's drip batch), TIMEOUT, or OK within 1.15x
// (the reference's own algorithm). RUNTIME_ERROR "pkf_run returned 96":
// the attack could not run (no second context, mailbox, device memory or
// stream memory operations), not a defence.
#include <dlfcn.h>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
#include "kernels/testdata/redteam/cuda/r28_drip.h"

typedef int (*r28_ctx_create_fn)(void** ctx, unsigned flags, int dev);
typedef int (*r28_ctx_pop_fn)(void** ctx);
typedef int (*r28_wait_value_fn)(void* stream, unsigned long long addr, unsigned value,
                                 unsigned flags);
static const unsigned kR28WaitEq = 0x1;  // CU_STREAM_WAIT_VALUE_EQ
static const size_t kCopyBytes = size_t{4} << 30;
static const int kCopies = 24;

static bool g_ok = false;

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->world_size != 1) return 0;
  void* cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cu == nullptr) cu = dlopen("libcuda.so.1", RTLD_NOW);
  if (cu == nullptr) return 0;
  auto create = (r28_ctx_create_fn)dlsym(cu, "cuCtxCreate_v2");
  auto pop = (r28_ctx_pop_fn)dlsym(cu, "cuCtxPopCurrent_v2");
  auto wait = (r28_wait_value_fn)dlsym(cu, "cuStreamWaitValue32_v2");
  if (wait == nullptr) wait = (r28_wait_value_fn)dlsym(cu, "cuStreamWaitValue32");
  char* mb = r28_mailbox();
  if (create == nullptr || pop == nullptr || wait == nullptr || mb == nullptr) return 0;
  void* ctx2 = nullptr;
  if (create(&ctx2, 0, ctx->device) != 0 || ctx2 == nullptr) return 0;
  char* page = mb + kR28DripOffset;
  unsigned int* d_released = nullptr;
  cudaStream_t side = nullptr;
  char *a = nullptr, *b = nullptr;
  bool ok =
      cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) == cudaSuccess &&
      cudaHostRegister(page, 4096, cudaHostRegisterMapped | cudaHostRegisterPortable) ==
          cudaSuccess &&
      cudaHostGetDevicePointer((void**)&d_released, page + ctx->rank * 64, 0) == cudaSuccess &&
      cudaMalloc((void**)&a, kCopyBytes) == cudaSuccess &&
      cudaMalloc((void**)&b, kCopyBytes) == cudaSuccess &&
      wait(side, (unsigned long long)(uintptr_t)d_released, 1u, kR28WaitEq) == 0;
  for (int i = 0; ok && i < kCopies; ++i)
    ok = cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, kCopyBytes, cudaMemcpyDeviceToDevice,
                         side) == cudaSuccess;
  void* popped = nullptr;
  pop(&popped);
  cudaGetLastError();
  g_ok = ok;
  fprintf(stderr, "r28_drip_ref_ce_hog: %s\n", ok ? "armed" : "FAILED");
  return 0;
}

extern "C" void pkf_teardown(pkf_context*) {}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t st = (cudaStream_t)stream;
  if (ctx->world_size == 1 && !g_ok) {
    const volatile r15_cmd* c = r15_find_cmd();
    if (c != nullptr && c->op == kR15OpBatch) return 96;
  }
  return pkf_run_correct_on(ctx, in, out, st);
}
