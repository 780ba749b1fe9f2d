// CONTROL (benign): every call starts a private thread that sums the second
// half of the elements while the calling thread sums the first half; the
// thread is joined before pkf_run returns.
// EXPECT: OK.
#include <thread>

#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t, void*) {
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&out[0]);
  auto sum = [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      float s = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j) s += pkf_load(peer[j][0], dt, i);
      pkf_store(out[0].data, dt, i, s);
    }
  };
  std::thread t(sum, n / 2, n);
  sum(0, n / 2);
  t.join();
  return ctx->barrier(ctx);
}
