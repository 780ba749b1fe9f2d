// The forked child of Sandbox::Spawn (internal to sandbox/): everything it
// does between fork() and exec, from a plan the parent prepared before
// fork(). The parent may be multi-threaded, so between fork and exec only
// async-signal-safe system calls are allowed (no malloc, no locks, no
// logging): RunChild only reads the plan and makes system calls.
//
// Thread safety: RunChild runs in the child alone; ChildStepName is pure.
#pragma once

#include <sched.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace pkforge::sandbox::internal {

// Which step failed; the child writes {step, errno} to the exec-error pipe.
enum ChildStep : int32_t {
  kStepCgroup = 1,
  kStepSetgroups,
  kStepSetgid,
  kStepSetuid,
  kStepDup,
  kStepChdir,
  kStepRlimit,
  kStepExec,
  kStepParentGone,
  kStepAffinity,
  kStepNice,
};

// What a failed step was doing, for the parent's error message.
const char* ChildStepName(int32_t step);

struct ChildPlan {
  const char* exec_path = nullptr;
  std::vector<char*> argv;  // null-terminated, pointing into strings kept alive
  std::vector<char*> envp;
  struct FdMove {
    int src;
    int dst;
    bool cloexec;
  };
  std::vector<FdMove> fds;
  std::vector<int> cgroup_procs_fds;
  struct Limit {
    int resource;
    struct rlimit value;
  };
  std::vector<Limit> limits;
  // CPUs the command and everything it starts may run on (set_cpus false:
  // the parent's).
  bool set_cpus = false;
  cpu_set_t cpus;
  int nice = 0;  // setpriority before exec (0: unchanged)
  int64_t uid = -1, gid = -1;
  const char* chdir_path = nullptr;
  pid_t parent_pid = 0;
  int error_fd = -1;  // write end of the exec-error pipe (before the moves)
};

// Sets the child up as `p` says and execs; on failure reports {step, errno}
// on p.error_fd and exits 127. Never returns.
[[noreturn]] void RunChild(const ChildPlan& p);

}  // namespace pkforge::sandbox::internal
