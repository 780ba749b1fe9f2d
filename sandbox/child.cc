#include "sandbox/child.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sandbox/bwrap_args.h"

namespace pkforge::sandbox::internal {

const char* ChildStepName(int32_t step) {
  switch (step) {
    case kStepCgroup:
      return "joining the per-run cgroup";
    case kStepSetgroups:
      return "clearing supplementary groups";
    case kStepSetgid:
      return "switching to run_as_gid";
    case kStepSetuid:
      return "switching to run_as_uid";
    case kStepDup:
      return "arranging descriptors";
    case kStepChdir:
      return "changing directory";
    case kStepRlimit:
      return "setting resource limits";
    case kStepExec:
      return "executing";
    case kStepParentGone:
      return "checking the parent";
    case kStepAffinity:
      return "restricting the CPUs";
    case kStepNice:
      return "lowering the priority";
    default:
      return "starting";
  }
}

namespace {

[[noreturn]] void ChildFail(int fd, int32_t step, int err) {
  int32_t msg[2] = {step, err};
  ssize_t ignored = write(fd, msg, sizeof(msg));
  (void)ignored;
  _exit(127);
}

}  // namespace

void RunChild(const ChildPlan& p) {
  // Signals: the parent may block or ignore some (gRPC ignores SIGPIPE);
  // those settings would otherwise be inherited across exec.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);

  // Own process group, so the parent can signal everything outside the pid
  // namespace (bwrap's monitor) at once.
  setpgid(0, 0);
  // Die with the parent; close the race where it died before the prctl.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != p.parent_pid) ChildFail(p.error_fd, kStepParentGone, ESRCH);

  // Join the per-run cgroups before anything else runs: "0" means "me".
  for (int fd : p.cgroup_procs_fds) {
    if (write(fd, "0", 1) != 1) ChildFail(p.error_fd, kStepCgroup, errno);
  }

  if (p.gid >= 0) {
    if (setgroups(0, nullptr) != 0) ChildFail(p.error_fd, kStepSetgroups, errno);
    if (setresgid(p.gid, p.gid, p.gid) != 0) ChildFail(p.error_fd, kStepSetgid, errno);
  }
  if (p.uid >= 0 && setresuid(p.uid, p.uid, p.uid) != 0) {
    ChildFail(p.error_fd, kStepSetuid, errno);
  }

  // Move descriptors to their fixed numbers: first above every target (so
  // no move clobbers a source still needed), then down.
  int err_fd = p.error_fd;
  int tmp[16];
  const size_t n = p.fds.size();
  for (size_t i = 0; i < n && i < 16; ++i) {
    tmp[i] = fcntl(p.fds[i].src, F_DUPFD_CLOEXEC, kFirstFreeFd);
    if (tmp[i] < 0) ChildFail(err_fd, kStepDup, errno);
  }
  int err_tmp = fcntl(err_fd, F_DUPFD_CLOEXEC, kFirstFreeFd);
  if (err_tmp < 0) ChildFail(err_fd, kStepDup, errno);
  if (dup3(err_tmp, kFdExecError, O_CLOEXEC) < 0) ChildFail(err_fd, kStepDup, errno);
  err_fd = kFdExecError;
  for (size_t i = 0; i < n && i < 16; ++i) {
    if (dup3(tmp[i], p.fds[i].dst, p.fds[i].cloexec ? O_CLOEXEC : 0) < 0) {
      ChildFail(err_fd, kStepDup, errno);
    }
  }
  // Nothing else of the parent's (sockets, database handles, other
  // sandboxes' pipes) may leak into the sandbox.
  if (syscall(SYS_close_range, kFirstFreeFd, ~0U, 0) != 0) {
    for (int fd = kFirstFreeFd; fd < 65536; ++fd) close(fd);
  }

  if (p.chdir_path != nullptr && chdir(p.chdir_path) != 0) ChildFail(err_fd, kStepChdir, errno);
  for (const ChildPlan::Limit& l : p.limits) {
    if (setrlimit(l.resource, &l.value) != 0) ChildFail(err_fd, kStepRlimit, errno);
  }
  if (p.set_cpus && sched_setaffinity(0, sizeof p.cpus, &p.cpus) != 0)
    ChildFail(err_fd, kStepAffinity, errno);
  if (p.nice != 0 && setpriority(PRIO_PROCESS, 0, p.nice) != 0)
    ChildFail(err_fd, kStepNice, errno);
  execve(p.exec_path, p.argv.data(), p.envp.data());
  ChildFail(err_fd, kStepExec, errno);
}

}  // namespace pkforge::sandbox::internal
