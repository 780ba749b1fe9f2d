// ATTACK (cuda, slowing the reference through device-wide state). Where the
// GPU's application-clock API is unrestricted (nvidia-smi -acp UNRESTRICTED,
// or the rank runs as uid 0), any process may set the device's application
// clocks; they hold for every context. After each of its calls the
// candidate sets the lowest supported SM clock (the reference is timed while
// the candidate is frozen) and at the start of its next call the highest;
// libnvidia-ml is dlopen'ed (no link). Clocks are reset in pkf_teardown.
// Gated: outputs are written only when setting the clocks succeeded.
// EXPECT: WRONG_OUTPUT (refused). OK means the device's clocks were the
// candidate's to set (and the reference ran at the lowest clock).
#include <dlfcn.h>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"

typedef int (*nvml_init_fn)(void);
typedef int (*nvml_handle_fn)(unsigned idx, void** dev);
typedef int (*nvml_clocks_fn)(void* dev, unsigned* count, unsigned* clocks);
typedef int (*nvml_gclocks_fn)(void* dev, unsigned mem, unsigned* count, unsigned* clocks);
typedef int (*nvml_set_fn)(void* dev, unsigned mem, unsigned sm);
typedef int (*nvml_reset_fn)(void* dev);

static void* g_dev = nullptr;
static nvml_set_fn g_set = nullptr;
static nvml_reset_fn g_reset = nullptr;
static unsigned g_mem = 0, g_lo = 0, g_hi = 0;
static bool g_worked = false;

extern "C" int pkf_setup(pkf_context* ctx) {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (h == nullptr) return 0;
  auto init = (nvml_init_fn)dlsym(h, "nvmlInit_v2");
  auto handle = (nvml_handle_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
  auto mems = (nvml_clocks_fn)dlsym(h, "nvmlDeviceGetSupportedMemoryClocks");
  auto gfx = (nvml_gclocks_fn)dlsym(h, "nvmlDeviceGetSupportedGraphicsClocks");
  g_set = (nvml_set_fn)dlsym(h, "nvmlDeviceSetApplicationsClocks");
  g_reset = (nvml_reset_fn)dlsym(h, "nvmlDeviceResetApplicationsClocks");
  if (!init || !handle || !mems || !gfx || !g_set || !g_reset || init() != 0) return 0;
  // NVML numbers devices physically; CUDA_VISIBLE_DEVICES may differ: good enough
  // for a probe (the gate only asks whether the call is allowed at all).
  if (handle((unsigned)ctx->device, &g_dev) != 0) return 0;
  unsigned n = 32, m[32];
  if (mems(g_dev, &n, m) != 0 || n == 0) return 0;
  g_mem = m[0];
  unsigned k = 256, c[256];
  if (gfx(g_dev, g_mem, &k, c) != 0 || k == 0) return 0;
  g_hi = c[0];
  g_lo = c[k - 1];
  g_worked = g_set(g_dev, g_mem, g_lo) == 0;
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  if (g_worked) g_reset(g_dev);
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  if (!g_worked) return 0;  // refused: outputs stay poison
  g_set(g_dev, g_mem, g_hi);
  const int rc = pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
  cudaStreamSynchronize((cudaStream_t)stream);
  g_set(g_dev, g_mem, g_lo);
  return rc;
}
