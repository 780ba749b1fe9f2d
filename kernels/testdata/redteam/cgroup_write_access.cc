// ATTACK (starving the reference): candidate ranks run as uid 0 outside a
// sandbox; root-owned cgroup files are writable by uid 0 without any
// capability. Moving a reference rank into a cgroup with a tiny cpu quota (or
// a frozen freezer cgroup) starves it. Non-destructive probe: open the cgroup
// task lists and the freezer state for writing, write nothing.
// EXPECT: WRONG_OUTPUT (gated: outputs only if a cgroup control file opened
// for writing).
#include "kernels/testdata/redteam/redteam.h"
static bool attack(pkf_context*) {
  bool any = false;
  for (const char* p :
       {"/sys/fs/cgroup/cpu/tasks", "/sys/fs/cgroup/cpu/cgroup.procs", "/sys/fs/cgroup/freezer/tasks",
        "/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/unified/cgroup.procs",
        "/sys/fs/cgroup/cgroup.freeze"}) {
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    rt_log("open(%s, O_WRONLY) = %d", p, fd);
    if (fd >= 0) {
      any = true;
      close(fd);
    }
  }
  return any;
}
RT_GATED_CANDIDATE(attack)
