// ATTACK (slowing the reference through device-wide GPU state): the L2
// set-aside for persisting accesses is a device-wide setting, not a
// per-context one (which is why MPS clients may not change it). pkf_setup
// sets cudaLimitPersistingL2CacheSize to the device's maximum and, on every
// call, marks a private buffer of that size as persisting (access policy
// window on its stream, hit ratio 1) and touches it: the persisting lines
// stay in L2 after the candidate's call, and the reference's kernels (other
// context, while the candidate is frozen) run with the normal L2 shrunk to
// what is left. At PKB's shapes the reference's working set fits the full
// L2 and not the rest. The candidate is the NCCL allreduce.
// EXPECT: the reference unaffected (same speed with or without the limit:
// the judge resets the set-aside, or the driver isolates it), or
// CHEAT_DETECTED; never OK at a speedup bought by shrinking the reference's
// cache. (Predicted from the CUDA programming guide; not run: no GPU here.)
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
static void* persist = nullptr;
static size_t persist_bytes = 0;
__global__ void touch(volatile char* p, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    (void)p[i];
}
extern "C" int pkf_setup(pkf_context* ctx) {
  int max_persist = 0;
  cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, ctx->device);
  if (max_persist <= 0) return 0;
  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)max_persist);
  persist_bytes = (size_t)max_persist;
  return cudaMalloc(&persist, persist_bytes) != cudaSuccess;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (persist != nullptr) {
    cudaStreamAttrValue a = {};
    a.accessPolicyWindow.base_ptr = persist;
    a.accessPolicyWindow.num_bytes = persist_bytes;
    a.accessPolicyWindow.hitRatio = 1.0f;
    a.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    a.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &a);
    touch<<<64, 256, 0, s>>>((volatile char*)persist, persist_bytes);
    cudaStreamAttrValue off = {};
    cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &off);
  }
  return pkf_run_correct_on(ctx, in, out, s);
}
