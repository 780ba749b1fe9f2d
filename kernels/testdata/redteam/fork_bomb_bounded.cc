// ATTACK (containment): at the first call, a fork tree of 50 processes (each
// forks two children while a shared counter is below 50), all sleeping 120 s;
// the judge must stop and kill all of them although they fork while it kills.
// EXPECT: CHEAT_DETECTED outlived_call (or leftover_process); nothing left
// alive.
#include "kernels/testdata/redteam/redteam.h"
static std::atomic<int>* g_count = NULL;
static void spread() {
  for (int k = 0; k < 2; ++k) {
    if (g_count->fetch_add(1) >= 50) return;
    if (rt_fork() == 0) {
      spread();
      sleep(120);
      _exit(0);
    }
  }
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (g_count == NULL) {
    g_count = (std::atomic<int>*)mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (ctx->rank == 0) spread();
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
