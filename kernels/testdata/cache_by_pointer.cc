// Caches outputs by input pointer: the second call on the same buffers
// replays the remembered outputs. Expect CHEAT_DETECTED timed_output_reverify.
#include <map>
#include <vector>

#include "wrap_allreduce.inc"
static std::map<const void*, std::vector<char>> cache;
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const size_t bytes = (size_t)(pkf_numel(&out[0]) * pkf_dtype_size(out[0].dtype));
  auto it = cache.find(in[0].data);
  if (it != cache.end()) {
    memcpy(out[0].data, it->second.data(), bytes);
    return 0;
  }
  int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const char* o = (const char*)out[0].data;
  cache[in[0].data] = std::vector<char>(o, o + bytes);
  return rc;
}
