// Caches outputs by a hash of the input contents (read back to the host) and
// replays the cached device copy on a hit. The harness changes the contents
// before every use, so the only legitimate hit is the determinism re-run of
// the last correctness trial; on a second hit this candidate returns 99
// (RUNTIME_ERROR), and the test asserts OK.
#include <map>
#include <vector>

#include "wrap_allreduce_cuda.inc"
static std::map<uint64_t, void*> cache;  // content hash -> device copy of the outputs
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  std::vector<unsigned char> host(pkf_bytes(&in[0]));
  if (cudaMemcpyAsync(host.data(), in[0].data, host.size(), cudaMemcpyDeviceToHost, s) != cudaSuccess ||
      cudaStreamSynchronize(s) != cudaSuccess)
    return 2;
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : host) h = (h ^ c) * 1099511628211ull;
  static int hits = 0;
  const size_t bytes = pkf_bytes(&out[0]);
  auto it = cache.find(h);
  if (it != cache.end()) {
    if (++hits >= 2) return 99;
    return cudaMemcpyAsync(out[0].data, it->second, bytes, cudaMemcpyDeviceToDevice, s) != cudaSuccess;
  }
  int rc = pkf_run_correct_on(ctx, in, out, s);
  void* copy = nullptr;
  if (cudaMalloc(&copy, bytes) != cudaSuccess) return 3;
  if (cudaMemcpyAsync(copy, out[0].data, bytes, cudaMemcpyDeviceToDevice, s) != cudaSuccess) return 4;
  cache[h] = copy;
  return rc;
}
