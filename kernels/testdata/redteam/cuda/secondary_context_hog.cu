// ATTACK (cuda, work outside the call that the candidate's own synchronize
// cannot see). gpu_hog_setup's persistent kernel runs in the rank's primary
// context, so the device-wide synchronize the judge has the candidate rank
// run (kOpSync) waits for it. Here pkf_setup creates a SECOND context on the
// same GPU with the driver API (cuCtxCreate_v2 through dlsym: no link against
// libcuda) and launches the hog there: cudaDeviceSynchronize in the primary
// context returns at once, and the hog keeps running while the candidate is
// frozen and the reference is timed (contexts share the GPU by time
// slicing). Only the judge's idle probe (a trusted empty kernel that must
// complete within 5 ms after each call) can see it; whether it does depends
// on the GPU's time slice. The hog stops when pkf_teardown sets a flag.
// EXPECT: CHEAT_DETECTED outlived_call (the idle probe waited). OK means a
// kernel ran outside every call, undetected (gated on the second context:
// without it the outputs stay poison -> WRONG_OUTPUT).
#include <dlfcn.h>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"

typedef int (*ctx_create_fn)(void** ctx, unsigned flags, int dev);
typedef int (*ctx_pop_fn)(void** ctx);
typedef int (*ctx_push_fn)(void* ctx);

static void* g_ctx2 = nullptr;
static cudaStream_t g_side;
static volatile int* g_stop = nullptr;
static bool g_worked = false;
static ctx_push_fn g_push = nullptr;
static ctx_pop_fn g_pop = nullptr;

__global__ void hog2(volatile int* stop) {
  while (*stop == 0) {
    const long long t0 = clock64();
    while (clock64() - t0 < 100000) {
    }
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
  if (cudaHostAlloc((void**)&g_stop, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable) !=
      cudaSuccess)
    return 0;
  *g_stop = 0;
  // cuCtxCreate makes the new context current: the runtime calls below use it.
  if (create(&g_ctx2, 0, ctx->device) != 0 || g_ctx2 == nullptr) return 0;
  int* dev = nullptr;
  bool ok = cudaStreamCreateWithFlags(&g_side, cudaStreamNonBlocking) == cudaSuccess &&
            cudaHostGetDevicePointer((void**)&dev, (void*)g_stop, 0) == cudaSuccess;
  if (ok) {
    hog2<<<ctx->num_sms > 0 ? ctx->num_sms : 132, 256, 0, g_side>>>(dev);
    ok = cudaGetLastError() == cudaSuccess;
  }
  void* popped = nullptr;
  g_pop(&popped);  // back to the primary context for the harness and the calls
  g_worked = ok;
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  if (g_stop != nullptr) *g_stop = 1;
  if (g_ctx2 != nullptr && g_push(g_ctx2) == 0) {
    cudaStreamSynchronize(g_side);
    void* popped = nullptr;
    g_pop(&popped);
  }
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  if (!g_worked) return 0;  // no second context: outputs stay poison
  return pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
}
