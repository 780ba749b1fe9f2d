// Caches outputs by input pointer (device copies) and replays them on later
// calls with the same buffers. Expect CHEAT_DETECTED timed_output_reverify.
#include <map>
#include "wrap_allreduce_cuda.inc"
static std::map<const void*, void*> cache;
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t, void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  const size_t bytes = pkf_bytes(&out[0]);
  auto it = cache.find(in[0].data);
  if (it != cache.end()) return cudaMemcpyAsync(out[0].data, it->second, bytes, cudaMemcpyDeviceToDevice, s) != cudaSuccess;
  int rc = pkf_run_correct_on(ctx, in, out, s);
  void* copy = nullptr;
  if (cudaMalloc(&copy, bytes) != cudaSuccess) return 2;
  cudaMemcpyAsync(copy, out[0].data, bytes, cudaMemcpyDeviceToDevice, s);
  cache[in[0].data] = copy;
  return rc;
}
