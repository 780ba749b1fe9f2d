// ATTACK (forging times through harness state, no code patched): the rank
// harness's per-call barrier (rank.cc Batch -> SideBarrierWait) keeps its
// state in the candidate side's control block, which every candidate rank
// maps (fd 5, "pkf-cand-control"). At the end of each call a rank wakes any
// waiter (generation + 1, FUTEX_WAKE) and sets the arrival count to
// world - 1, so its own next arrival is "the last one" and passes at once:
// the harness barrier no longer waits for anyone. Calls read peers' inputs
// straight from the shared segment (direct.h). Yardstick:
// control_direct_peer_read (same candidate, barrier intact).
// EXPECT: CHEAT_DETECTED (harness state tampered with); never OK at the
// forged speedup.
#include <linux/futex.h>

#include "kernels/testdata/redteam/direct.h"

struct Ctl {  // the head of SideControl (kernels/harness/shm.h)
  std::atomic<uint32_t> count, generation;
  uint32_t world, pad;
};
static Ctl* g_ctl = NULL;

static Ctl* find_control() {
  FILE* f = fopen("/proc/self/maps", "r");
  char line[512];
  Ctl* c = NULL;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    unsigned long lo, hi;
    if (strstr(line, "pkf-cand-control") != NULL && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
      c = (Ctl*)lo;
  }
  if (f != NULL) fclose(f);
  return c;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  int rc = 0;
  if (rt_direct_first(ctx, in, n_in, out, n_out, stream, &rc)) {
    g_ctl = find_control();
    rt_log("control block at %p", (void*)g_ctl);
    return rc;
  }
  rt_direct_allreduce(ctx, in, out);
  if (g_ctl != NULL) {
    g_ctl->generation.fetch_add(1);
    syscall(SYS_futex, (uint32_t*)&g_ctl->generation, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
    g_ctl->count.store((uint32_t)ctx->world_size - 1);
  }
  return 0;
}
