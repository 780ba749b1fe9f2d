// ATTACK (leftover process): in pkf_teardown rank 0 starts a helper in a new
// session whose leader thread exits (a zombie leader: /proc/<pid>/stat says
// Z, so the judge's leftover_process check skips it). The helper's thread
// watches its parent: while its parent is the judge (it was orphaned and
// adopted by the judge, the child subreaper) it forks one successor (same
// kind) and keeps running until killed. The judge's final clean-up
// (KillAndReapAll) kills its direct children once per millisecond; each
// victim's successor is re-parented to the judge and forks the next one in
// well under a millisecond, so the chain outlives the clean-up (10 s) and
// the judge. One process per generation, each lives at most 40 s.
// EXPECT: CHEAT_DETECTED leftover_process, and nothing alive afterwards.
#include "kernels/testdata/redteam/zombie.h"

static int g_judge = 0;
static int64_t g_born = 0;

static void* link_thread(int, void* first) {
  bool forked = false;
  if (first != NULL) {
    // The first link makes its successor at once, while the judge is still
    // waiting for pkf_teardown (later, a link being born would be visible
    // for ~100 us to the judge's leftover check).
    forked = true;
    rt_zombie_spawn(1, link_thread, NULL);
  }
  for (;;) {
    const int pp = getppid();
    if (pp == g_judge && !forked) {
      forked = true;
      rt_zombie_spawn(1, link_thread, NULL);  // successor; its parent is us
    }
    if (rt_now_ns() - g_born > 40000000000LL) _exit(0);
    if (rt_gone(g_judge) && pp != g_judge) {
      static bool logged = false;
      if (!logged) rt_log("chain link %d outlived the judge %d (parent now %d)", getpid(), g_judge, pp);
      logged = true;
      rt_sleep_ns(50000000);
    } else {
      rt_sleep_ns(20000);
    }
  }
  return NULL;
}

extern "C" void pkf_teardown(pkf_context* ctx) {
  if (ctx->rank != 0) return;
  g_judge = getppid();
  g_born = rt_now_ns();
  const int pid = fork();
  if (pid == 0) {
    setsid();  // out of the judge's process group (kill(-pgid) at the end)
    rt_zombie_spawn(1, link_thread, (void*)1);
    _exit(0);  // the first link's parent dies at once: it is re-parented to the judge
  }
  if (pid > 0) {
    rt_record_pid(pid);
    waitpid(pid, NULL, 0);
    rt_sleep_ns(30000000);  // the second link is a zombie leader by now
  }
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
