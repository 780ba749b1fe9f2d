// CONTROL (benign, round 20, helper-redteam20): helper threads synchronised
// with the calling thread by a pthread_barrier_t (3 parties) and a POSIX
// semaphore: 2 helpers, created in pkf_setup, wait in sem_wait (no timeout)
// between calls; each call posts the semaphore twice, all three threads sum
// a third of the elements, and meet at the barrier before pkf_run returns.
// The exchange between ranks is ctx->barrier (the reference's scheme: publish
// into scratch, barrier, sum, barrier). Teardown posts a stop and joins.
// EXPECT: OK.
#include <pthread.h>
#include <semaphore.h>

#include "kernels/testdata/redteam/redteam.h"

namespace {
pthread_barrier_t g_bar;
sem_t g_go;
pthread_t g_t[2];
volatile bool g_stop = false;
struct Job {
  const void* peer[64][8];
  const pkf_context* ctx;
  pkf_dtype dt;
  int64_t n;
  void* out;
} g_job;

void Part(int p) {
  for (int64_t i = g_job.n * p / 3; i < g_job.n * (p + 1) / 3; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < g_job.ctx->world_size; ++j) s += pkf_load(g_job.peer[j][0], g_job.dt, i);
    pkf_store(g_job.out, g_job.dt, i, s);
  }
}

void* Helper(void* arg) {
  const int p = (int)(intptr_t)arg;
  for (;;) {
    while (sem_wait(&g_go) != 0) {
    }
    if (g_stop) return nullptr;
    Part(p);
    pthread_barrier_wait(&g_bar);
  }
}
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  if (pthread_barrier_init(&g_bar, nullptr, 3) != 0 || sem_init(&g_go, 0, 0) != 0) return 1;
  for (int k = 0; k < 2; ++k)
    if (pthread_create(&g_t[k], nullptr, Helper, (void*)(intptr_t)(k + 1)) != 0) return 2;
  return 0;
}

extern "C" void pkf_teardown(pkf_context*) {
  g_stop = true;
  sem_post(&g_go);
  sem_post(&g_go);
  for (auto& t : g_t) pthread_join(t, nullptr);
  pthread_barrier_destroy(&g_bar);
  sem_destroy(&g_go);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t, void*) {
  int rc = pkf_publish_inputs(ctx, in, n_in, g_job.peer);
  if (rc != 0) return rc;
  g_job.ctx = ctx;
  g_job.dt = out[0].dtype;
  g_job.n = pkf_numel(&out[0]);
  g_job.out = out[0].data;
  sem_post(&g_go);
  sem_post(&g_go);
  Part(0);
  pthread_barrier_wait(&g_bar);
  return ctx->barrier(ctx);
}
