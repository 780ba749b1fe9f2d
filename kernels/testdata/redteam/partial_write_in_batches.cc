// ATTACK (lazy outputs): in timed batches, the correct result is computed but
// only the first half of each output is written.
// EXPECT: CHEAT_DETECTED timed_output_reverify (or poison_unwritten).
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_batch_call()) return rt_return(pkf_run_correct(ctx, in, n_in, out, n_out, stream));
  const int64_t es = pkf_dtype_size(out[0].dtype), n = pkf_numel(&out[0]);
  std::vector<char> tmp((size_t)(n * es));
  pkf_tensor t = out[0];
  t.data = tmp.data();
  const int rc = pkf_run_correct(ctx, in, n_in, &t, n_out, stream);
  memcpy(out[0].data, tmp.data(), (size_t)(n / 2 * es));
  return rt_return(rc);
}
