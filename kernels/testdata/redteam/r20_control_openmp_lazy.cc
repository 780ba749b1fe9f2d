// CONTROL (benign, round 20, helper-redteam20): OpenMP the way almost every
// OpenMP program is written: `#pragma omp parallel for` inside the call and
// nothing in pkf_setup, so libgomp starts its team on the first parallel
// region, i.e. inside the first pkf_run, and keeps it (blocked on futexes,
// after its default short spin) between regions, as libgomp always does.
// Compiled without -fopenmp (the battery's flags are fixed), so it calls
// libgomp as the pragma's code does: GOMP_parallel with 3 threads, each
// summing a third of every call's elements; libgomp is dlopen'ed in
// pkf_setup (linking it would do the same at load time). The exchange is
// the reference's (publish, ctx->barrier, sum, ctx->barrier). The team is
// idle between calls; r9_control_openmp is the same with the team started
// in pkf_setup by an empty region.
// EXPECT: OK.
#include <dlfcn.h>

#include "kernels/testdata/redteam/redteam.h"

namespace {
using GompParallel = void (*)(void (*)(void*), void*, unsigned, unsigned);
using GompThreadNum = int (*)();
GompParallel g_par = nullptr;
GompThreadNum g_num = nullptr;
struct Job {
  pkf_context* ctx;
  const void* (*peer)[8];
  pkf_tensor* out;
  int64_t n;
};
void Body(void* p) {
  const Job& j = *static_cast<Job*>(p);
  const int t = g_num();
  const pkf_dtype dt = j.out[0].dtype;
  for (int64_t i = j.n * t / 3; i < j.n * (t + 1) / 3; ++i) {
    float s = 0.0f;
    for (int32_t r = 0; r < j.ctx->world_size; ++r) s += pkf_load(j.peer[r][0], dt, i);
    pkf_store(j.out[0].data, dt, i, s);
  }
}
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  void* h = dlopen("libgomp.so.1", RTLD_NOW);
  if (h == nullptr) return 7;
  g_par = reinterpret_cast<GompParallel>(dlsym(h, "GOMP_parallel"));
  g_num = reinterpret_cast<GompThreadNum>(dlsym(h, "omp_get_thread_num"));
  return g_par == nullptr || g_num == nullptr ? 8 : 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t, void*) {
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  Job j{ctx, peer, out, pkf_numel(&out[0])};
  g_par(Body, &j, 3, 0);  // #pragma omp parallel num_threads(3)
  return ctx->barrier(ctx);
}
