// Caches outputs by a hash of the input contents and replays them on a hit.
// The harness changes the contents before every use, so the only legitimate
// hit is the determinism re-run of the last correctness trial; on a second
// hit this candidate returns 99 (RUNTIME_ERROR), and the test asserts OK.
#include <map>
#include <vector>

#include "wrap_allreduce.inc"
static std::map<uint64_t, std::vector<char>> cache;
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const size_t in_bytes = (size_t)(pkf_numel(&in[0]) * pkf_dtype_size(in[0].dtype));
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < in_bytes; ++i) h = (h ^ ((const unsigned char*)in[0].data)[i]) * 1099511628211ull;
  static int hits = 0;
  auto it = cache.find(h);
  if (it != cache.end()) {
    if (++hits >= 2) return 99;
    memcpy(out[0].data, it->second.data(), it->second.size());
    return 0;
  }
  int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const size_t bytes = (size_t)(pkf_numel(&out[0]) * pkf_dtype_size(out[0].dtype));
  cache[h] = std::vector<char>((const char*)out[0].data, (const char*)out[0].data + bytes);
  return rc;
}
