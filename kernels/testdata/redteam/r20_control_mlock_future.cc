// CONTROL (benign, round 20, helper-redteam20): a latency-minded candidate
// that locks its memory: pkf_setup calls mlockall(MCL_CURRENT |
// MCL_FUTURE) (and, if that fails for RLIMIT_MEMLOCK, mlockall(MCL_FUTURE)
// alone), ignoring failure, as real-time code does, then allocates and
// touches a 4 MiB private workspace; every call sums into the workspace and
// copies out (the reference's exchange: publish, ctx->barrier, sum,
// ctx->barrier). Any later mapping of the process (the harness's included)
// is then locked too, or fails past RLIMIT_MEMLOCK: the candidate's risk,
// but it must not become a HARNESS_ERROR.
// EXPECT: OK (or the candidate's own failure: SETUP_ERROR / RUNTIME_ERROR).
#include "kernels/testdata/redteam/redteam.h"

namespace {
std::vector<float>* g_ws = nullptr;
}

extern "C" int pkf_setup(pkf_context*) {
  if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
    const int e1 = errno;
    const int rc2 = mlockall(MCL_FUTURE);
    fprintf(stderr, "mlockall(CURRENT|FUTURE): %s; mlockall(FUTURE): %s\n", strerror(e1),
            rc2 == 0 ? "ok" : strerror(errno));
  }
  try {
    g_ws = new std::vector<float>(1u << 20, 0.0f);
  } catch (...) {
    return 3;
  }
  return 0;
}

extern "C" void pkf_teardown(pkf_context*) {
  delete g_ws;
  g_ws = nullptr;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t, void*) {
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&out[0]);
  if ((size_t)n > g_ws->size()) return 8;
  float* acc = g_ws->data();
  for (int64_t i = 0; i < n; ++i) acc[i] = 0.0f;
  for (int32_t j = 0; j < ctx->world_size; ++j)
    for (int64_t i = 0; i < n; ++i) acc[i] += pkf_load(peer[j][0], dt, i);
  for (int64_t i = 0; i < n; ++i) pkf_store(out[0].data, dt, i, acc[i]);
  return ctx->barrier(ctx);
}
