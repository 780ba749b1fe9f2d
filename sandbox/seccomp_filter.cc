#include "sandbox/seccomp_filter.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace pkforge::sandbox {
namespace {

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

// Denied with EPERM, unconditionally. Names unknown to this libseccomp or
// architecture are skipped (e.g. the 32-bit-only ones on x86_64).
constexpr const char* kDenyEperm[] = {
    // Inspecting or modifying another process: the trusted harness processes
    // of an evaluation share the sandbox with candidate code.
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    // Namespace games (new user namespaces are the usual door to kernel bugs).
    "setns",
    // Mounts and filesystem handles (also need capabilities we dropped).
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "open_by_handle_at",
    "name_to_handle_at",
    // Kernel keyrings: shared kernel state, history of bugs, no use here.
    "keyctl",
    "add_key",
    "request_key",
    // Frequent privilege-escalation surfaces reachable without capabilities.
    "bpf",
    "userfaultfd",
    // Kernel and machine state.
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "syslog",
    "quotactl",
    "quotactl_fd",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "stime",
    "vhangup",
    "iopl",
    "ioperm",
    "uselib",
    "lookup_dcookie",
    "nfsservctl",
    "fanotify_init",
};

// Denied with ENOSYS so that libraries take their "kernel too old" path
// instead of failing: glibc falls back from clone3 to clone (whose flags we
// can inspect; clone3 passes them in memory a filter cannot read), and
// io_uring users (none we know of in the toolchain) fall back to plain I/O.
constexpr const char* kDenyEnosys[] = {
    "clone3",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
};

constexpr uint64_t kNamespaceFlags[] = {
    CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
    CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET,
};

struct CtxDeleter {
  void operator()(void* ctx) const { seccomp_release(static_cast<scmp_filter_ctx>(ctx)); }
};

absl::Status RuleError(std::string_view what, int rc) {
  return absl::InternalError(fmt::format("seccomp rule {}: {}", what, std::strerror(-rc)));
}

}  // namespace

std::vector<std::string> DeniedSyscalls(const SeccompOptions& options) {
  std::vector<std::string> out;
  for (const char* name : kDenyEperm) out.emplace_back(name);
  for (const char* name : kDenyEnosys) out.emplace_back(fmt::format("{} (ENOSYS)", name));
  if (!options.allow_perf_events) out.emplace_back("perf_event_open");
  out.emplace_back("clone(CLONE_NEW*)");
  out.emplace_back("unshare(CLONE_NEW*)");
  out.emplace_back("ioctl(TIOCSTI|TIOCLINUX)");
  return out;
}

absl::StatusOr<std::string> BuildSeccompFilter(const SeccompOptions& options) {
  std::unique_ptr<void, CtxDeleter> holder(seccomp_init(SCMP_ACT_ALLOW));
  auto ctx = static_cast<scmp_filter_ctx>(holder.get());
  if (ctx == nullptr) return absl::InternalError("seccomp_init failed");
  // A foreign-ABI syscall (int 0x80, x32) would bypass every rule below.
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc < 0) return RuleError("bad-arch action", rc);

  auto deny_all = [&](const char* name, uint32_t action) -> absl::Status {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return absl::OkStatus();  // not on this arch
    int r = seccomp_rule_add(ctx, action, nr, 0);
    // -EDOM/-EINVAL come back for pseudo-syscalls that do not exist natively.
    if (r < 0 && r != -EDOM && r != -EINVAL) return RuleError(name, r);
    return absl::OkStatus();
  };
  for (const char* name : kDenyEperm) RETURN_IF_ERROR(deny_all(name, SCMP_ACT_ERRNO(EPERM)));
  for (const char* name : kDenyEnosys) RETURN_IF_ERROR(deny_all(name, SCMP_ACT_ERRNO(ENOSYS)));
  if (!options.allow_perf_events) {
    RETURN_IF_ERROR(deny_all("perf_event_open", SCMP_ACT_ERRNO(EPERM)));
  }

  // clone: flags are the first argument on x86_64 and arm64. One rule per
  // flag because libseccomp allows one comparison per argument and rule.
  // CLONE_NEWTIME (0x80) is not listed: in clone()'s flags those bits carry
  // the exit signal; it is only meaningful for unshare/clone3.
  for (uint64_t flag : kNamespaceFlags) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
    if (rc < 0) return RuleError("clone", rc);
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
    if (rc < 0) return RuleError("unshare", rc);
  }
  rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                        SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWTIME, CLONE_NEWTIME));
  if (rc < 0) return RuleError("unshare", rc);

  // Pushing bytes into a terminal's input queue runs commands as whoever owns
  // the terminal. --new-session already detaches us; this is belt and braces.
  for (unsigned long req :
       {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                          SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, req));
    if (rc < 0) return RuleError("ioctl", rc);
  }

  // Export through a memfd: seccomp_export_bpf only writes to descriptors.
  int fd = memfd_create("pkforge-seccomp", MFD_CLOEXEC);
  if (fd < 0) return ErrnoError("memfd_create for seccomp export", errno);
  rc = seccomp_export_bpf(ctx, fd);
  if (rc < 0) {
    close(fd);
    return RuleError("export", rc);
  }
  std::string bytes;
  off_t size = lseek(fd, 0, SEEK_END);
  if (size > 0) {
    bytes.resize(static_cast<size_t>(size));
    ssize_t n = pread(fd, bytes.data(), bytes.size(), 0);
    if (n != size) bytes.clear();
  }
  close(fd);
  if (bytes.empty() || bytes.size() % 8 != 0) {
    return absl::InternalError("seccomp export produced no program");
  }
  return bytes;
}

}  // namespace pkforge::sandbox
