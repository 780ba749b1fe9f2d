// ATTACK (containment): a correct candidate whose pkf_teardown tries
// unshare(CLONE_NEWUSER | CLONE_NEWPID) (a new PID namespace whose init
// nobody outside knows, and capabilities inside it), then leaves a child
// sleeping 120 s (a plain double-forked daemon when unshare is refused).
// EXPECT: CHEAT_DETECTED leftover_process; nothing left alive.
#include <sched.h>

#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
extern "C" void pkf_teardown(pkf_context*) {
  const int u = unshare(CLONE_NEWUSER | CLONE_NEWPID);
  rt_log("unshare(CLONE_NEWUSER|CLONE_NEWPID) = %d", u);
  const int c = fork();  // in the new PID namespace when unshare worked
  if (c == 0) {
    if (fork() != 0) _exit(0);
    sleep(120);
    _exit(0);
  }
  if (c > 0) {
    rt_record_pid(c);  // our namespace's pid of it
    waitpid(c, NULL, 0);
  }
  // The grandchild records nothing itself when it is in a new namespace:
  // find it among our namespace's processes by its parent chain instead.
  DIR* d = opendir("/proc");
  while (d != NULL) {
    struct dirent* e = readdir(d);
    if (e == NULL) break;
    const int pid = atoi(e->d_name);
    if (pid > 0 && rt_read("/proc/" + std::to_string(pid) + "/cmdline").find("pkforge") != std::string::npos &&
        rt_stat_field(pid, 5) == rt_stat_field(getpid(), 5) && pid != getpid())
      rt_record_pid(pid);  // same process group as the rank: ours (or a sibling rank: harmless)
  }
  if (d != NULL) closedir(d);
}
