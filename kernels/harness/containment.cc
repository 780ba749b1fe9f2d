// The hardening of candidate processes (containment.h): MakeNonDumpable,
// HardenCandidateProcess (uid, capabilities, Landlock, the OOM score) and the
// seccomp filters. The judge's census of candidate processes
// (CandidateProcesses and the /proc readers) is candidate_processes.cc.
#include "kernels/harness/containment.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/landlock.h>
#include <linux/securebits.h>
#include <linux/sockios.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <asm/ioctls.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fmt/format.h"

namespace pkforge::kernels {
namespace {

int AddRule(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned count,
            const scmp_arg_cmp* cmp) {
  if (nr < 0) return 0;  // a syscall this libseccomp (or architecture) does not know
  return seccomp_rule_add_array(ctx, action, nr, count, cmp);
}

}  // namespace

absl::Status MakeNonDumpable() {
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
    return absl::InternalError(fmt::format("prctl(PR_SET_DUMPABLE, 0): {}", strerror(errno)));
  return absl::OkStatus();
}

namespace {

// Landlock (Linux >= 5.13, unprivileged): from here on this process and
// everything it starts may write only beneath `writable` (every right to
// create, remove, rename, link, truncate and write files) and to the
// null-like devices; nothing else, /proc least of all. Under /proc is the
// judge's business: /proc/self/oom_score_adj (a rank set it to 1000 so that
// the out-of-memory killer takes candidate processes first; the kernel locks
// that floor only for a writer with CAP_SYS_RESOURCE, so a candidate could
// write 0 back, fill an unmapped memfd and have the judge killed instead:
// red team oom_adj_reset_blame), /proc/self/{attr,coredump_filter,...}.
// Everywhere else is other evaluations' business: a launch by a plain user
// keeps that user's uid in the ranks, and a candidate that could write where
// the user can replaced the worker binary (found through /proc/self/exe)
// and the libraries beside its own with a forger: the next launch printed
// "OK" at 99x for an all-zero candidate (red team round 15
// r15_judge_binary_write; only WRITE_FILE was handled, so creating,
// renaming and removing files was free everywhere). Candidates that need
// scratch files have memfd_create (no path, nothing left behind).
// Returns false where the kernel has no Landlock (the caller says so).
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
// Landlock ABI 6 (Linux 6.12): scopes, in a field of the ruleset attribute
// that older headers lack.
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;
  uint64_t scoped = 0;
};
constexpr uint64_t kScopeAbstractUnixSocket = 1ULL << 0;
constexpr uint64_t kScopeSignal = 1ULL << 1;
//
// Reading, too, is confined where it reaches other people's input: every
// file outside /dev may be read, and in /dev only the null-like devices,
// the random ones and /dev/shm. A plain user's launch keeps that user's uid
// in the ranks, which could otherwise read the user's terminals
// (/dev/pts/N: what is typed in another session, a password to sudo, taken
// out of the input queue before its program sees it; red team round 17
// r17_pts_read), and input devices where the user may.
// And with Landlock ABI 6, the scopes: no abstract unix socket outside the
// rank's own domain (a datagram sent to a user's service by name), no
// signal to a process outside it.
bool ConfineWrites(const std::vector<std::string>& writable) {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0,
                           LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return false;
  uint64_t file_rights = LANDLOCK_ACCESS_FS_WRITE_FILE;
  if (abi >= 3) file_rights |= LANDLOCK_ACCESS_FS_TRUNCATE;
  // ioctl on devices (a terminal above all: red team round 16
  // r16_tty_inject) only on the null-like devices.
  if (abi >= 5) file_rights |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  uint64_t all = file_rights | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                 LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
                 LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
                 LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                 LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) all |= LANDLOCK_ACCESS_FS_REFER;
  const uint64_t read = LANDLOCK_ACCESS_FS_READ_FILE;
  RulesetAttr attr;
  attr.handled_access_fs = all | read;
  if (abi >= 6) attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
  // The attribute's size tells the kernel which fields it knows: ABI < 6
  // would refuse a non-zero size for fields it lacks.
  const size_t attr_size = abi >= 6 ? sizeof attr : offsetof(RulesetAttr, handled_access_net);
  const int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0));
  if (ruleset < 0) return false;
  // A rule that cannot be added leaves its path unwritable; the ruleset is
  // enforced all the same (denying more, never everything allowed).
  struct stat proc{};
  const bool have_proc = stat("/proc", &proc) == 0;
  // One rule: `rights` beneath `path` (on a file, only the rights a file
  // takes). Write rights never on the proc mount, whatever name it was given
  // by; reading /proc stays.
  auto add_rule = [&](const std::string& path, uint64_t rights, bool writes) {
    const int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) return;  // a device or folder this machine lacks
    struct stat st{};
    if (fstat(fd, &st) != 0 || (writes && have_proc && st.st_dev == proc.st_dev)) {
      close(fd);
      return;
    }
    landlock_path_beneath_attr rule{};
    rule.allowed_access = S_ISDIR(st.st_mode) ? rights : (rights & (file_rights | read));
    rule.parent_fd = fd;
    if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0)
      fprintf(stderr, "pkforge: %s stays %s (landlock_add_rule: %s)\n", path.c_str(),
              writes ? "unwritable" : "unreadable", strerror(errno));
    close(fd);
  };
  auto allow = [&](const std::string& path, uint64_t rights) { add_rule(path, rights, true); };
  auto allow_read = [&](const std::string& path) { add_rule(path, read, false); };
  if (DIR* root = opendir("/")) {
    while (dirent* e = readdir(root)) {
      const std::string name = e->d_name;
      if (name == "." || name == ".." || name == "dev") continue;
      allow_read("/" + name);
    }
    closedir(root);
  }
  for (const char* dev :
       {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/shm"})
    allow_read(dev);
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/full"}) allow(dev, file_rights);
  for (const std::string& dir : writable) {
    allow(dir, all);
    allow_read(dir);
  }
  // Needs no_new_privs (set by the caller first).
  const bool ok = syscall(SYS_landlock_restrict_self, ruleset, 0) == 0;
  close(ruleset);
  return ok;
}

// The rules cuda ranks get only in their late filter (LoadLateCandidateFilter).
int AddLateRules(scmp_filter_ctx ctx, bool timers, bool processes) {
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  auto ne = [](unsigned arg, uint64_t v) { return scmp_arg_cmp{arg, SCMP_CMP_NE, v, 0}; };
  int rc = 0;
  // Kernel timers and asynchronous work that go on while the candidate is
  // stopped: thousands of timerfds, POSIX timers or io_uring timeouts armed
  // before a stop fire as interrupts on the CPU the reference is timed on
  // (red team irq_storm_ref, irq_storm_uring: OK at 2-4x with the naive
  // algorithm); so do an interval timer of a few us (setitimer/alarm:
  // ITIMER_REAL runs on through a stop, one timer is a storm) and TCP's
  // pacing and retransmit timers (round 10 tcp_pacing_storm: ~200 paced
  // loopback packets queued at each batch's end, OK 1.2-1.9x with the naive
  // algorithm), so no socket but AF_UNIX (a host kernel needs none). A
  // stopped thread's nanosleep or poll timeout is cancelled by the stop.
  if (timers) {
    for (int nr : {SCMP_SYS(timerfd_create), SCMP_SYS(timer_create), SCMP_SYS(io_uring_setup),
                   SCMP_SYS(io_setup), SCMP_SYS(setitimer), SCMP_SYS(alarm)})
      rc |= AddRule(ctx, eperm, nr, 0, nullptr);
    for (int nr : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
      scmp_arg_cmp not_unix = ne(0, AF_UNIX);
      rc |= AddRule(ctx, eperm, nr, 1, &not_unix);
    }
  }
  // No new process (containment.h): the kernel kills the whole process
  // (SIGSYS), so the judge sees the attempt instead of a candidate that
  // shrugs off an error.
  if (processes) {
    const uint32_t kill = SCMP_ACT_KILL_PROCESS;
    rc |= AddRule(ctx, kill, SCMP_SYS(fork), 0, nullptr);
    rc |= AddRule(ctx, kill, SCMP_SYS(vfork), 0, nullptr);
    scmp_arg_cmp not_thread{0, SCMP_CMP_MASKED_EQ, uint64_t{CLONE_THREAD}, 0};
    rc |= AddRule(ctx, kill, SCMP_SYS(clone), 1, &not_thread);
  }
  return rc;
}

}  // namespace

absl::Status HardenCandidateProcess(bool drop_root, bool confine_writes, bool forbid_timers,
                                    bool forbid_processes, const std::vector<std::string>& writable) {
  // First victim of any out-of-memory kill, and so are its children (the
  // value is inherited): memory a candidate holds in unmapped memfds or
  // shmem counts for no process, so without this the OOM killer picks the
  // largest trusted process (red team: memfd_oom_blame killed the judge).
  // Raising one's own value needs no privilege; done before the uid drop,
  // after which /proc/self is no longer ours to write.
  {
    const int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      const bool ok = write(fd, "1000", 4) == 4;
      const int err = errno;
      close(fd);
      if (!ok) return absl::InternalError(fmt::format("oom_score_adj: {}", strerror(err)));
    }
  }
  if (drop_root && geteuid() == 0) {
    // Fails harmlessly (EINVAL) in a user namespace that maps only our uid.
    if (setgroups(0, nullptr) == 0 && setresgid(65534, 65534, 65534) == 0 &&
        setresuid(65534, 65534, 65534) != 0)
      return absl::InternalError(fmt::format("dropping to uid 65534: {}", strerror(errno)));
  }
  // No core dump, to a file or a pipe: where kernel.core_pattern is a pipe
  // (systemd-coredump, apport: common defaults) a crashing rank makes the
  // kernel start that helper as root, in the host's namespaces and outside
  // any sandbox or freeze, with the rank's memory on its stdin; RLIMIT_CORE
  // does not bound a pipe, except that 1 makes the kernel skip the dump
  // (predicted by red team round 25 from the kernel's source). 1 is also
  // below any file dump's minimum. The hard limit too, and the filter below
  // refuses changing it (lowering it to 0 would let the pipe run again).
  // Under a hard limit of 0 (a sandbox's) 1 cannot be set: 0 it stays.
  {
    rlimit now{};
    if (getrlimit(RLIMIT_CORE, &now) != 0)
      return absl::InternalError(fmt::format("RLIMIT_CORE: {}", strerror(errno)));
    const rlim_t v = now.rlim_max < 1 ? now.rlim_max : 1;
    const rlimit fixed{v, v};
    if (setrlimit(RLIMIT_CORE, &fixed) != 0)
      return absl::InternalError(fmt::format("RLIMIT_CORE: {}", strerror(errno)));
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return absl::InternalError(fmt::format("no_new_privs: {}", strerror(errno)));
  if (confine_writes && !ConfineWrites(writable))
    fprintf(stderr, "pkforge: no Landlock in this kernel: a candidate can write wherever its "
                    "uid may, and lower its own oom_score_adj (docs/threat-model.md)\n");
  // Capabilities. As root outside a sandbox a candidate would otherwise hold
  // CAP_SYS_PTRACE (read any process's memory), CAP_KILL, ... Lock root out
  // of regaining them on exec first (needs CAP_SETPCAP, which we then drop).
  if (prctl(PR_CAPBSET_READ, CAP_SETPCAP, 0, 0, 0) == 1) {
    prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                 SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_NOROOT |
                                 SECBIT_NOROOT_LOCKED,
          0, 0, 0);
    for (int c = 0; c <= 63; ++c) prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &hdr, data) != 0)
    return absl::InternalError(fmt::format("dropping capabilities: {}", strerror(errno)));
  return LoadCandidateSeccompFilter(confine_writes, forbid_timers, forbid_processes);
}

absl::Status LoadCandidateSeccompFilter(bool confine_writes, bool forbid_timers,
                                        bool forbid_processes) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return absl::InternalError(fmt::format("no_new_privs: {}", strerror(errno)));
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return absl::InternalError("seccomp_init failed");
  const uint64_t self = static_cast<uint64_t>(getpid());
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  const uint32_t ignore = SCMP_ACT_ERRNO(0);  // "succeeds", does nothing
  int rc = 0;
  auto ne = [](unsigned arg, uint64_t v) { return scmp_arg_cmp{arg, SCMP_CMP_NE, v, 0}; };
  // A command argument the kernel reads as a 32-bit int (fcntl's cmd,
  // ioctl's request) compared on its low 32 bits only: a 64-bit equality
  // let (1 << 32) | F_SETOWN through, which the kernel took for F_SETOWN
  // (red team round 18 r18_fcntl_owner_hi: a sibling process stopped by a
  // SIGIO made SIGSTOP). The refusals by inequality (pids, families) are
  // safe on 64 bits: high bits only make them refuse more.
  auto eq32 = [](unsigned arg, uint64_t v) {
    return scmp_arg_cmp{arg, SCMP_CMP_MASKED_EQ, 0xffffffffULL, v};
  };
  // Signals reach only this process (exact 64-bit match: pid <= 0, i.e.
  // process groups and "everyone", and any other pid are refused).
  for (int nr : {SCMP_SYS(kill), SCMP_SYS(tkill), SCMP_SYS(tgkill), SCMP_SYS(rt_sigqueueinfo),
                 SCMP_SYS(rt_tgsigqueueinfo), SCMP_SYS(pidfd_open)}) {
    scmp_arg_cmp c = ne(0, self);
    rc |= AddRule(ctx, eperm, nr, 1, &c);
  }
  // A pidfd could name anyone; SIGIO ownership delivers signals to any pid.
  for (int nr : {SCMP_SYS(pidfd_send_signal), SCMP_SYS(pidfd_getfd), SCMP_SYS(ptrace),
                 SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev), SCMP_SYS(kcmp),
                 SCMP_SYS(process_madvise), SCMP_SYS(setns), SCMP_SYS(unshare),
                 SCMP_SYS(migrate_pages), SCMP_SYS(move_pages)})
    rc |= AddRule(ctx, eperm, nr, 0, nullptr);
  // F_SETLEASE and F_NOTIFY set the caller as a signal owner too; a lease
  // also needs only a read-only descriptor of a file the uid owns, and while
  // it is held every process that opens the file for writing (a read lease)
  // or at all (a write lease, granted on a read-only descriptor when nobody
  // else has the file open) sleeps in open() for up to lease-break-time,
  // 45 s: red team round 19 r19_lease_hold blocked root's append 4.8 s
  // during the launch and 45.6 s after it (the leased descriptor kept in a
  // unix-socket cycle). Neither CUDA nor NCCL takes leases.
  for (uint64_t cmd : {uint64_t{F_SETOWN}, uint64_t{F_SETSIG}, uint64_t{F_SETOWN_EX},
                       uint64_t{F_SETLEASE}, uint64_t{F_NOTIFY}}) {
    scmp_arg_cmp c = eq32(1, cmd);
    rc |= AddRule(ctx, eperm, SCMP_SYS(fcntl), 1, &c);
  }
  // Core scheduling: a cookie of the candidate's would keep the SMT sibling
  // of its CPU (where the judge may run) idle while a rank runs, so that
  // progress-probe stops take hold late (the mechanism of round 13's
  // r13_late_stop_whole; predicted in round 19 on SMT hosts with
  // CONFIG_SCHED_CORE, untestable on a kernel without it).
  {
    scmp_arg_cmp c = eq32(0, PR_SCHED_CORE);
    rc |= AddRule(ctx, eperm, SCMP_SYS(prctl), 1, &c);
  }
  // Typing into a terminal (TIOCSTI; TIOCLINUX's paste): a rank that kept
  // the caller's controlling terminal typed a command that the caller's
  // shell ran after the judge exited, as root for a root launch (red team
  // round 16 r16_tty_inject). Candidate ranks also give up the controlling
  // terminal before exec (rank_pool.cc StartRank: TIOCNOTTY).
  for (uint64_t req : {uint64_t{FIOSETOWN}, uint64_t{SIOCSPGRP}, uint64_t{TIOCSTI},
                       uint64_t{TIOCLINUX}}) {
    scmp_arg_cmp c = eq32(1, req);
    rc |= AddRule(ctx, eperm, SCMP_SYS(ioctl), 1, &c);
  }
  // New namespaces (a user namespace would hand out capabilities again).
  for (uint64_t flag : {uint64_t{CLONE_NEWUSER}, uint64_t{CLONE_NEWPID}, uint64_t{CLONE_NEWNET},
                        uint64_t{CLONE_NEWNS}, uint64_t{CLONE_NEWIPC}, uint64_t{CLONE_NEWUTS},
                        uint64_t{CLONE_NEWCGROUP}}) {
    scmp_arg_cmp c{0, SCMP_CMP_MASKED_EQ, flag, flag};
    rc |= AddRule(ctx, eperm, SCMP_SYS(clone), 1, &c);
  }
  // clone3 passes its flags in memory a filter cannot read: ENOSYS makes
  // glibc fall back to clone.
  rc |= AddRule(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0, nullptr);
  // Scheduling policy, priority and time slice, of anyone, the caller
  // included: success and no effect (libraries that set their own threads'
  // get what they got before, nothing). Another process's would starve or
  // stall the reference; the caller's own would keep the judge off the
  // ranks' CPU: red team round 13 r13_late_stop_whole asked sched_setattr
  // for a 100 ms slice (sched_runtime) on its fused ranks, so that on
  // EEVDF the judge, woken on that CPU, waited for the slice to end and
  // every progress probe's stop took hold late (inconclusive): OK 11-24x
  // whenever the judge's other CPU was busy. SCHED_FIFO and a negative
  // nice, for a rank running as root, would do the same.
  for (int nr : {SCMP_SYS(sched_setscheduler), SCMP_SYS(sched_setparam),
                 SCMP_SYS(sched_setattr)})
    rc |= AddRule(ctx, ignore, nr, 0, nullptr);
  // CPU affinity of anyone, the caller included: the judge pins candidate
  // rank r to the CPU of reference rank r, and a candidate must not widen
  // its own set to the judge's CPU or every other one (red team:
  // affinity_escape). NCCL pinning its threads gets success, no effect.
  rc |= AddRule(ctx, ignore, SCMP_SYS(sched_setaffinity), 0, nullptr);
  {
    scmp_arg_cmp who = ne(1, 0);  // self
    rc |= AddRule(ctx, ignore, SCMP_SYS(setpriority), 0, nullptr);
    rc |= AddRule(ctx, ignore, SCMP_SYS(ioprio_set), 1, &who);
    scmp_arg_cmp pid = ne(0, 0);
    rc |= AddRule(ctx, eperm, SCMP_SYS(prlimit64), 1, &pid);
  }
  // The kernel's keyrings: a rank possesses the caller's session keyring
  // (red team round 17 r17_keyring_read read, rewrote and planted keys in
  // it) and reaches its user's keyring. Every rank, cuda too: neither CUDA
  // nor NCCL uses keys, and an EPERM is an error a library reports.
  for (const char* name : {"add_key", "request_key", "keyctl"})
    rc |= AddRule(ctx, eperm, seccomp_syscall_resolve_name(name), 0, nullptr);
  // Its core-dump limit (set to 1 above): no change, either way.
  {
    scmp_arg_cmp core = eq32(0, RLIMIT_CORE);
    rc |= AddRule(ctx, eperm, SCMP_SYS(setrlimit), 1, &core);
    const scmp_arg_cmp core_set[2] = {eq32(1, RLIMIT_CORE), ne(2, 0)};
    rc |= AddRule(ctx, eperm, SCMP_SYS(prlimit64), 2, core_set);
  }
  // Secret memory: every page of a memfd_secret a rank touches is taken out
  // of the kernel's direct map, which splits its 1 GiB and 2 MiB pages for
  // good (red team round 25 r25_secretmem_split: direct_map_level2_splits
  // 87 -> 114 over four launches, never collapsed): a change to the host
  // that outlives the evaluation and slows every later one. Every rank (CUDA
  // and NCCL do not use it). By number where libseccomp does not name it.
  {
    int nr = seccomp_syscall_resolve_name("memfd_secret");
#if defined(__x86_64__) || defined(__aarch64__)
    if (nr == __NR_SCMP_ERROR) nr = 447;
#endif
    if (nr != __NR_SCMP_ERROR) rc |= AddRule(ctx, eperm, nr, 0, nullptr);
  }
  rc |= AddLateRules(ctx, forbid_timers, forbid_processes);
  if (confine_writes) {
    // Host ranks, beside Landlock's write confinement: what Landlock has no
    // right for. File metadata (modes, owners, times, extended attributes)
    // of the user's files: red team round 16 r16_metadata_write made the
    // worker binary non-executable and another candidate's library
    // unreadable for the next launches. And sockets: Landlock does not
    // cover connect(), nor abstract unix names, so an AF_UNIX socket
    // reached the user's services (a session bus runs commands: round 16
    // r16_unix_connect). Ranks talk through the harness's shared memory;
    // socketpair stays (a pair of connected sockets reaches no one).
    for (const char* name :
         {"chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
          "utime", "utimes", "utimensat", "futimesat", "setxattr", "lsetxattr", "fsetxattr",
          "setxattrat", "removexattr", "lremovexattr", "fremovexattr", "removexattrat", "socket",
          // Objects that outlive the process and have no path (red team round
          // 17 r17_ipc_leftover: System V segments and message queues left
          // after the evaluation, memory pinned for good and a channel to the
          // next candidate). Ranks share memory through the harness's
          // segments. (cuda ranks: CUDA's and NCCL's use of them not yet
          // checked on a GPU; the executor's sandbox has an IPC namespace of
          // its own.)
          "shmget", "shmat", "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget",
          "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend",
          "mq_timedreceive", "mq_notify", "mq_getsetattr"})
      rc |= AddRule(ctx, eperm, seccomp_syscall_resolve_name(name), 0, nullptr);
    // A datagram socket of a pair can still be aimed at any named socket
    // (sendto with an address, connect again): round 17 r17_dgram_sendto
    // reached the user's datagram services, and SOCK_RAW is a datagram pair
    // too (af_unix turns it into SOCK_DGRAM: r17_dgram_raw). Only stream and
    // seqpacket pairs stay, and no socket is bound, connected or listening:
    // a pair reaches no one.
    for (uint64_t type = 0; type <= 0xf; ++type) {
      if (type == SOCK_STREAM || type == SOCK_SEQPACKET) continue;
      scmp_arg_cmp other{1, SCMP_CMP_MASKED_EQ, 0xf, type};
      rc |= AddRule(ctx, eperm, SCMP_SYS(socketpair), 1, &other);
    }
    // Performance counters: on hosts with kernel.perf_event_paranoid <= 0 a
    // CPU-wide sampling event is a timer that fires on the reference's CPU
    // while the candidate is stopped (row 25's storm; red team round 17
    // r17_perf_event, refused here by paranoid = 2 only).
    // And file locks: a read-only descriptor is enough to hold another
    // program's lock (a database's, a package manager's, a build's) for as
    // long as the ranks live (red team round 18). Candidates use no files.
    for (const char* name :
         {"bind", "connect", "listen", "accept", "accept4", "perf_event_open", "flock"})
      rc |= AddRule(ctx, eperm, seccomp_syscall_resolve_name(name), 0, nullptr);
    // Freeing pages of the harness's segments under the judge (hole
    // punching, MADV_REMOVE): their seals keep the size, not the pages, and
    // a rank punched its own data segment (red team round 25 r25_recon; no
    // verdict changed: out of memory ends as RUNTIME_ERROR) - the segments
    // stay allocated as the judge made them. fallocate's plain mode 0
    // (allocate) stays.
    {
      const scmp_arg_cmp mode = ne(1, 0);
      rc |= AddRule(ctx, eperm, SCMP_SYS(fallocate), 1, &mode);
      const scmp_arg_cmp remove = eq32(2, MADV_REMOVE);
      rc |= AddRule(ctx, eperm, SCMP_SYS(madvise), 1, &remove);
    }
    for (uint64_t cmd : {uint64_t{F_SETLK}, uint64_t{F_SETLKW}, uint64_t{F_OFD_SETLK},
                         uint64_t{F_OFD_SETLKW}}) {
      scmp_arg_cmp c = eq32(1, cmd);
      rc |= AddRule(ctx, eperm, SCMP_SYS(fcntl), 1, &c);
    }
    // Descriptors in messages (SCM_RIGHTS): a rank put both ends of a pair
    // and a memfd into the pair's own queue and closed them, a cycle no
    // process holds that kept 1 GiB a rank after the evaluation, out of
    // every OOM count (red team round 19 r19_gc_leak; in a 1 GiB memory
    // cgroup the next honest launch's judge was OOM-killed). A filter cannot
    // read msg_control, so the calls go: pairs carry bytes (write, send),
    // not descriptors. cuda ranks keep them (NCCL passes cuMem handles):
    // the judge and the sandbox collect such cycles after every teardown
    // (common/unix_gc.h).
    for (const char* name : {"sendmsg", "sendmmsg"})
      rc |= AddRule(ctx, eperm, seccomp_syscall_resolve_name(name), 0, nullptr);
    // Socket timeouts: a read() of a socket with SO_RCVTIMEO is a timed sleep
    // that looks like a thread waiting for work (red team round 21
    // r21_rcvtimeo_*: a first-call thread passed as an idle helper, then
    // wrote outputs late or spun). Both the old and the 64-bit time variants.
    for (uint64_t opt : {uint64_t{SO_RCVTIMEO_OLD}, uint64_t{SO_SNDTIMEO_OLD},
                         uint64_t{SO_RCVTIMEO_NEW}, uint64_t{SO_SNDTIMEO_NEW}}) {
      const scmp_arg_cmp c[2] = {eq32(1, SOL_SOCKET), eq32(2, opt)};
      rc |= AddRule(ctx, eperm, SCMP_SYS(setsockopt), 2, c);
    }
    // Inode flags and attributes through any descriptor, a read-only one
    // included (only ownership is checked): round 19 r19_fsflags set
    // synchronous writes, no-dump and no-atime on files of the ranks' uid
    // that outlived the launch (in a plain user's launch: every file of the
    // user). Every ioctl of type 'f' (FS_IOC_GET/SETFLAGS, versions, FIEMAP,
    // fscrypt and fs-verity set-up), FS_IOC_FSSETXATTR and FS_IOC_SETVERSION.
    {
      scmp_arg_cmp type_f{1, SCMP_CMP_MASKED_EQ, 0xff00, 0x6600};
      rc |= AddRule(ctx, eperm, SCMP_SYS(ioctl), 1, &type_f);
      for (uint64_t req : {uint64_t{FS_IOC_FSSETXATTR}, uint64_t{FS_IOC_SETVERSION}}) {
        scmp_arg_cmp c = eq32(1, req);
        rc |= AddRule(ctx, eperm, SCMP_SYS(ioctl), 1, &c);
      }
    }
    // ... and file_setattr (Linux 6.17), the path form of FS_IOC_FSSETXATTR,
    // which Landlock does not cover either: red team round 26
    // r26_file_setattr set synchronous writes, no-dump and no-atime on a
    // file of the ranks' uid outside the writable folders (OK 0.68x; 200
    // appends 13x slower after the launch).
    rc |= AddRule(ctx, eperm, seccomp_syscall_resolve_name("file_setattr"), 0, nullptr);
    // Dropping other files' page cache (POSIX_FADV_DONTNEED on a read-only
    // descriptor evicted a 16 MiB root-owned file: round 26
    // r26_fadvise_evict), and a write-lifetime hint left on the inode of a
    // file the uid owns (F_SET_RW_HINT, F_SET_FILE_RW_HINT: round 26).
    {
      const scmp_arg_cmp dontneed = eq32(3, 4 /*POSIX_FADV_DONTNEED*/);
      rc |= AddRule(ctx, eperm, SCMP_SYS(fadvise64), 1, &dontneed);
      for (uint64_t cmd : {uint64_t{1036} /*F_SET_RW_HINT*/, uint64_t{1038} /*F_SET_FILE_RW_HINT*/}) {
        scmp_arg_cmp c = eq32(1, cmd);
        rc |= AddRule(ctx, eperm, SCMP_SYS(fcntl), 1, &c);
      }
    }
    // BPF programs: refused on most hosts by kernel.unprivileged_bpf_disabled
    // alone; where it is 0 a program's JIT image, like memfd_secret, would
    // change the kernel's memory map (round 26's prediction).
    rc |= AddRule(ctx, eperm, seccomp_syscall_resolve_name("bpf"), 0, nullptr);
#if defined(__x86_64__)
    // Newer than this libseccomp may know (x86_64 numbers): fchmodat2
    // (Linux 6.6), setxattrat and removexattrat (6.13), file_setattr (6.17).
    for (int nr : {452, 463, 466, 469}) {
      char* known = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
      if (known == nullptr) rc |= AddRule(ctx, eperm, nr, 0, nullptr);
      free(known);
    }
    // Syscalls newer than this filter (Linux 6.18's last is 469; 470 up to
    // the x32 range): ENOSYS, as on a kernel without them, whether or not a
    // newer libseccomp knows their names, so that a new interface is closed
    // to host candidates until it has been looked at (round 26: file_setattr
    // was open for the months between its kernel and this filter). libc
    // falls back on ENOSYS.
    for (int nr = 470; nr < 512; ++nr)
      rc |= AddRule(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0, nullptr);
#endif
  }
  if (rc != 0) {
    seccomp_release(ctx);
    return absl::InternalError(fmt::format("building the candidate seccomp filter: {}", rc));
  }
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  // A syscall of another ABI (i386 int $0x80, x32) kills the whole process
  // too, not only its thread (libseccomp's default): a killed main thread
  // left a zombie leader and a rank whose helper threads ran on until the
  // timeout (red team round 9 r9_forkban_abi: TIMEOUT, or nothing at all
  // from a helper thread).
  seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0)
    return absl::InternalError(fmt::format("loading the candidate seccomp filter: {}", strerror(-rc)));
  return absl::OkStatus();
}

absl::Status LoadLateCandidateFilter() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return absl::InternalError("seccomp_init failed");
  if (const int rc = AddLateRules(ctx, /*timers=*/true, /*processes=*/true); rc != 0) {
    seccomp_release(ctx);
    return absl::InternalError(fmt::format("building the late candidate filter: {}", rc));
  }
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  const int rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0)
    return absl::InternalError(
        fmt::format("loading the late candidate filter: {}", strerror(-rc)));
  return absl::OkStatus();
}

}  // namespace pkforge::kernels
