// CONTROL (benign): an OpenMP candidate under the base fork ban (175e7b2).
// Compiled without -fopenmp (the battery's flags are fixed), so it calls
// libgomp the way `#pragma omp parallel` code does: GOMP_parallel with 3
// threads, each summing a third of every call's elements (libgomp starts its
// team with pthread_create: clone3 -> ENOSYS -> clone(CLONE_THREAD)), plus a
// std::thread started and joined in every call. The team is started in
// pkf_setup (an empty region): libgomp keeps it between regions, and threads
// first started in a call and alive after it are CHEAT outlived_call.
// EXPECT: OK.
#include <dlfcn.h>

#include <thread>

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
void Sum(const Job& j, int64_t lo, int64_t hi) {
  const pkf_dtype dt = j.out[0].dtype;
  for (int64_t i = lo; i < hi; ++i) {
    float s = 0.0f;
    for (int32_t r = 0; r < j.ctx->world_size; ++r) s += pkf_load(j.peer[r][0], dt, i);
    pkf_store(j.out[0].data, dt, i, s);
  }
}
void Body(void* p) {
  const Job& j = *static_cast<Job*>(p);
  const int t = g_num();
  Sum(j, j.n * t / 3, j.n * (t + 1) / 3);
}
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  void* h = dlopen("libgomp.so.1", RTLD_NOW);
  if (h == nullptr) return 7;
  g_par = reinterpret_cast<GompParallel>(dlsym(h, "GOMP_parallel"));
  g_num = reinterpret_cast<GompThreadNum>(dlsym(h, "omp_get_thread_num"));
  if (g_par == nullptr || g_num == nullptr) return 8;
  // libgomp keeps its team alive between regions: start it here (threads
  // born in a call and alive after it are outlived_call).
  g_par([](void*) {}, nullptr, 3, 0);
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t, void*) {
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  Job j{ctx, peer, out, pkf_numel(&out[0])};
  g_par(Body, &j, 3, 0);
  int extra = 0;
  std::thread([&extra] { extra = 1; }).join();
  if (extra != 1) return 9;
  return ctx->barrier(ctx);
}
