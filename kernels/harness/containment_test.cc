// Adversarial tests of harness/containment.h with real processes: each child
// plays a candidate (or a trusted process) and reports what it could do.
#include "kernels/harness/containment.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "kernels/harness/containment_test_util.h"
#include "kernels/harness/shm.h"

namespace pkforge::kernels {
namespace {

using testing::InChild;
using testing::Reap;
using testing::Sleeper;

// Host candidate ranks: starting a process kills the whole process with
// SIGSYS (fork, posix_spawn alike, also from a thread started before the
// filter); threads still start. Loaded in the base filter, before any
// candidate code, so nothing the candidate installs first can fake it.
TEST(Harden, StartingAProcessKillsTheCandidate) {
  EXPECT_EQ(InChild([] {
              if (!HardenCandidateProcess().ok()) return 10;
              std::atomic<int> x{0};
              std::thread t([&] { x = 1; });
              t.join();
              if (x != 1) return 11;
              const pid_t c = fork();
              if (c == 0) _exit(0);
              return 12;  // fork returned in the parent: not refused
            }),
            128 + SIGSYS);
  EXPECT_EQ(InChild([] {
              if (!HardenCandidateProcess().ok()) return 10;
              return std::system("true") == -1 ? 13 : 12;
            }),
            128 + SIGSYS);
#if defined(__x86_64__)
  // A syscall of the i386 ABI (int $0x80, here getpid) from a helper thread
  // kills the whole process, not only that thread.
  EXPECT_EQ(InChild([] {
              if (!HardenCandidateProcess().ok()) return 10;
              std::thread t([] {
                long ret = 20;  // __NR_getpid on i386
                asm volatile("int $0x80" : "+a"(ret) : : "memory");
              });
              t.join();
              return 12;  // the main thread went on: only the helper died
            }),
            128 + SIGSYS);
#endif
}

// cuda candidate ranks (opt-in, PKFORGE_CUDA_LATE_FILTER=1): their early
// filter leaves timers, sockets and processes alone (libcuda and NCCL set
// up after it); the late filter, loaded before the candidate's library,
// adds those rules, on every thread.
TEST(Harden, TheLateFilterAddsWhatCudaRanksLackedEarly) {
  EXPECT_EQ(InChild([] {
              if (!HardenCandidateProcess(false, false, /*forbid_timers=*/false,
                                          /*forbid_processes=*/false)
                       .ok())
                return 10;
              // What CUDA and NCCL set-up may still use.
              const int tcp = socket(AF_INET, SOCK_STREAM, 0);
              if (tcp < 0) return 11;
              close(tcp);
              const int tfd = timerfd_create(CLOCK_MONOTONIC, 0);
              if (tfd < 0) return 12;
              close(tfd);
              std::atomic<int> seen{0};
              std::thread early([&] {
                while (seen.load() == 0) std::this_thread::yield();
                seen = socket(AF_INET6, SOCK_DGRAM, 0) < 0 && errno == EPERM ? 2 : 3;
              });
              if (!LoadLateCandidateFilter().ok()) return 13;
              if (socket(AF_INET, SOCK_STREAM, 0) >= 0 || errno != EPERM) return 14;
              if (timerfd_create(CLOCK_MONOTONIC, 0) >= 0 || errno != EPERM) return 15;
              itimerval every_us{{0, 2}, {0, 2}};
              if (setitimer(ITIMER_REAL, &every_us, nullptr) == 0 || errno != EPERM) return 16;
              const int local = socket(AF_UNIX, SOCK_STREAM, 0);
              if (local < 0) return 17;
              close(local);
              seen = 1;  // a thread started before the filter has it too (TSYNC)
              early.join();
              if (seen != 2) return 18;
              const pid_t c = fork();
              if (c == 0) _exit(0);
              return 19;  // fork returned in the parent: not refused
            }),
            128 + SIGSYS);
}

TEST(Harden, SignalsReachOnlyTheCandidateItself) {
  const pid_t trusted = Sleeper(false);
  const int rc = InChild([trusted] {
    if (!HardenCandidateProcess().ok()) return 10;
    if (kill(trusted, SIGSTOP) == 0 || errno != EPERM) return 11;
    if (kill(trusted, SIGKILL) == 0) return 12;
    if (kill(0, SIGCONT) == 0) return 13;        // own process group (shared with the judge's)
    if (kill(-1, SIGCONT) == 0) return 14;       // everyone
    if (syscall(SYS_tgkill, trusted, trusted, SIGKILL) == 0) return 15;
    if (kill(getpid(), 0) != 0) return 16;       // itself: allowed (raise, abort)
    if (raise(SIGCONT) != 0) return 17;
    // SIGIO ownership would deliver signals to any pid.
    int p[2];
    if (pipe(p) != 0) return 18;
    if (fcntl(p[0], F_SETOWN, trusted) == 0) return 19;
    if (fcntl(p[0], F_SETSIG, SIGKILL) == 0) return 20;
    // The same commands with bits above the 32 the kernel reads (red team
    // round 18 r18_fcntl_owner_hi): refused all the same, also without
    // Landlock (cuda ranks' hardening: the filter alone).
    const uint64_t hi = uint64_t{1} << 32;
    if (syscall(SYS_fcntl, p[0], hi | F_SETOWN, trusted) == 0) return 21;
    if (syscall(SYS_fcntl, p[0], hi | F_SETSIG, SIGSTOP) == 0) return 22;
    if (syscall(SYS_fcntl, p[0], hi | F_SETOWN_EX, nullptr) == 0 || errno != EPERM) return 23;
    char c = 'x';
    if (syscall(SYS_ioctl, p[0], hi | TIOCSTI, &c) == 0 || errno != EPERM) return 24;
    return 0;
  });
  EXPECT_EQ(rc, 0);
  // Still alive, never stopped.
  EXPECT_EQ(kill(trusted, 0), 0);
  EXPECT_EQ(ThreadState(trusted, trusted) == 'T', false);
  Reap(trusted);
}

// The filter alone, as a cuda reference rank loads it (so its system calls
// cost what the candidate's cost): the same refusals, and nothing else of
// the hardening: capabilities and the OOM score stay as they were.
TEST(Harden, TheFilterAloneRefusesTheSameAndDropsNothingElse) {
  const pid_t trusted = Sleeper(false);
  auto cap_eff = [] {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("CapEff:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 16);
    return ~0ull;
  };
  auto oom = [] {
    std::ifstream f("/proc/self/oom_score_adj");
    int v = -9999;
    f >> v;
    return v;
  };
  const int rc = InChild([&] {
    const unsigned long long caps = cap_eff();
    const int score = oom();
    if (!LoadCandidateSeccompFilter(false, false, false).ok()) return 10;
    if (kill(trusted, SIGSTOP) == 0 || errno != EPERM) return 11;
    if (ptrace(PTRACE_ATTACH, trusted, nullptr, nullptr) == 0) return 12;
    if (unshare(CLONE_NEWNS) == 0) return 13;
    // No keyring, as for every candidate rank (cuda ones included).
    if (syscall(SYS_keyctl, 0 /*KEYCTL_GET_KEYRING_ID*/, -3 /*session*/, 0) >= 0 || errno != EPERM)
      return 16;
    if (cap_eff() != caps) return 14;
    if (oom() != score) return 15;
    return 0;
  });
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(kill(trusted, 0), 0);
  Reap(trusted);
}

TEST(Harden, NoPtraceNoNamespacesNoCapabilities) {
  const pid_t trusted = Sleeper(false);
  const int rc = InChild([trusted] {
    // (Without the process ban, as cuda ranks have it.)
    if (!HardenCandidateProcess(false, true, true, /*forbid_processes=*/false).ok()) return 10;
    if (ptrace(PTRACE_ATTACH, trusted, nullptr, nullptr) == 0) return 11;
    if (unshare(CLONE_NEWUSER) == 0) return 12;
    if (unshare(CLONE_NEWPID) == 0) return 13;
    // Fork still works there (the judge tracks such processes).
    const pid_t c = fork();
    if (c == 0) _exit(7);
    int st = 0;
    if (c < 0 || waitpid(c, &st, 0) != c || WEXITSTATUS(st) != 7) return 14;
    // Threads too (clone3 -> ENOSYS -> clone fallback).
    std::atomic<int> x{0};
    std::thread t([&] { x = 1; });
    t.join();
    if (x != 1) return 15;
    // No capability left, not even after exec (checked via /proc/self/status).
    FILE* f = fopen("/proc/self/status", "r");
    char line[256];
    bool bounded = false, effective = false;
    while (f != nullptr && fgets(line, sizeof line, f)) {
      if (strncmp(line, "CapEff:", 7) == 0) effective = strtoull(line + 7, nullptr, 16) == 0;
      if (strncmp(line, "CapBnd:", 7) == 0) bounded = strtoull(line + 7, nullptr, 16) == 0;
    }
    if (f != nullptr) fclose(f);
    if (!effective) return 16;
    // The bounding set can only be emptied by a process that held CAP_SETPCAP.
    if (!bounded && geteuid() == 0) return 17;
    return 0;
  });
  EXPECT_EQ(rc, 0);
  Reap(trusted);
}

// Timers that fire while the candidate is stopped (an interrupt storm on the
// reference's CPU, red team irq_storm_ref / irq_storm_uring) cannot be armed;
// a plain sleep still works.
TEST(Harden, NoTimersThatOutliveAStop) {
  const int rc = InChild([] {
    // Before hardening each works (so the refusal below is the filter's).
    const int tfd = timerfd_create(CLOCK_MONOTONIC, 0);
    if (tfd < 0) return 9;
    close(tfd);
    const int tcp = socket(AF_INET, SOCK_STREAM, 0);
    if (tcp < 0) return 8;
    close(tcp);
    if (!HardenCandidateProcess().ok()) return 10;
    if (timerfd_create(CLOCK_MONOTONIC, 0) >= 0 || errno != EPERM) return 11;
    timer_t t;
    sigevent ev{};
    ev.sigev_notify = SIGEV_NONE;
    if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &t) == 0 || errno != EPERM) return 12;
    char params[120] = {};
    if (syscall(SYS_io_uring_setup, 8, params) >= 0 || errno != EPERM) return 13;
    unsigned long aio = 0;
    if (syscall(SYS_io_setup, 8, &aio) == 0 || errno != EPERM) return 14;
    if (usleep(1000) != 0) return 15;
    // An interval timer runs on through a stop (one of a few us is a storm).
    itimerval every_us{{0, 2}, {0, 2}};
    if (setitimer(ITIMER_REAL, &every_us, nullptr) == 0 || errno != EPERM) return 16;
    if (syscall(SYS_alarm, 1) != -1 || errno != EPERM) return 17;
    // TCP's pacing and retransmit timers too (red team round 10
    // tcp_pacing_storm): no socket but AF_UNIX.
    if (socket(AF_INET, SOCK_STREAM, 0) >= 0 || errno != EPERM) return 18;
    if (socket(AF_INET6, SOCK_DGRAM, 0) >= 0 || errno != EPERM) return 19;
    int sv[2];
    if (socketpair(AF_INET, SOCK_STREAM, 0, sv) == 0 || errno != EPERM) return 20;
    // Host ranks (confine_writes) get no socket at all: an AF_UNIX one
    // reached the user's services (red team round 16 r16_unix_connect);
    // a connected pair reaches no one and stays.
    if (socket(AF_UNIX, SOCK_STREAM, 0) >= 0 || errno != EPERM) return 21;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 22;
    close(sv[0]);
    close(sv[1]);
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

TEST(Harden, SchedulingOfOtherProcessesHasNoEffect) {
  const pid_t trusted = Sleeper(false);
  const int before = getpriority(PRIO_PROCESS, trusted);
  cpu_set_t all;
  sched_getaffinity(trusted, sizeof all, &all);
  const int rc = InChild([trusted] {
    cpu_set_t pinned;  // as the judge pins a rank before it hardens itself
    CPU_ZERO(&pinned);
    CPU_SET(0, &pinned);
    if (sched_setaffinity(0, sizeof pinned, &pinned) != 0) return 9;
    if (!HardenCandidateProcess().ok()) return 10;
    setpriority(PRIO_PROCESS, trusted, 19);  // "succeeds", does nothing
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    sched_setaffinity(trusted, sizeof one, &one);
    struct rlimit cpu = {1, 1};
    if (prlimit(trusted, RLIMIT_CPU, &cpu, nullptr) == 0) return 11;
    // Its own priority "succeeds" and changes nothing
    // (Harden.ItsOwnSchedulingIsFixedToo).
    const int own = getpriority(PRIO_PROCESS, 0);
    if (setpriority(PRIO_PROCESS, 0, 5) != 0 || getpriority(PRIO_PROCESS, 0) != own) return 12;
    // It is the out-of-memory killer's first choice.
    char adj[16] = {0};
    const int fd = open("/proc/self/oom_score_adj", O_RDONLY);
    if (fd < 0 || read(fd, adj, sizeof adj - 1) <= 0 || atoi(adj) != 1000) return 15;
    close(fd);
    // Its own CPU set cannot be widened beyond what the judge pinned it to
    // (the call "succeeds" and changes nothing).
    cpu_set_t mine, wide, now;
    sched_getaffinity(0, sizeof mine, &mine);
    CPU_ZERO(&wide);
    for (int c = 0; c < CPU_SETSIZE; ++c) CPU_SET(c, &wide);
    if (sched_setaffinity(0, sizeof wide, &wide) != 0) return 13;
    sched_getaffinity(0, sizeof now, &now);
    if (!CPU_EQUAL(&mine, &now)) return 14;
    return 0;
  });
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(getpriority(PRIO_PROCESS, trusted), before);
  cpu_set_t after;
  sched_getaffinity(trusted, sizeof after, &after);
  EXPECT_TRUE(CPU_EQUAL(&all, &after));
  struct rlimit cpu;
  prlimit(trusted, RLIMIT_CPU, nullptr, &cpu);
  EXPECT_EQ(cpu.rlim_cur, RLIM_INFINITY);
  Reap(trusted);
}

// Its own scheduling neither: red team round 13 r13_late_stop_whole asked
// sched_setattr for a 100 ms time slice (EEVDF's sched_runtime), so that the
// judge, woken on the ranks' CPU, waited for it and the progress probes'
// stops took hold late; SCHED_FIFO (a rank running as root may) and a
// negative nice would do the same. Each call "succeeds" and changes nothing.
struct SchedAttr {  // struct sched_attr (linux/sched/types.h), version 1
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period;
  uint32_t sched_util_min, sched_util_max;
};
TEST(Harden, ItsOwnSchedulingIsFixedToo) {
  const int rc = InChild([] {
    SchedAttr before{};
    if (syscall(SYS_sched_getattr, 0, &before, sizeof before, 0) != 0) return 2;
    const int nice_before = getpriority(PRIO_PROCESS, 0);
    if (!HardenCandidateProcess().ok()) return 10;
    SchedAttr slice = before;
    slice.size = sizeof slice;
    slice.sched_policy = SCHED_OTHER;
    slice.sched_runtime = 100'000'000;  // a 100 ms slice
    if (syscall(SYS_sched_setattr, 0, &slice, 0) != 0) return 3;
    SchedAttr after{};
    if (syscall(SYS_sched_getattr, 0, &after, sizeof after, 0) != 0) return 4;
    if (after.sched_runtime != before.sched_runtime || after.sched_policy != before.sched_policy)
      return 5;
    sched_param fifo{};
    fifo.sched_priority = 1;
    if (sched_setscheduler(0, SCHED_FIFO, &fifo) != 0) return 6;
    if (sched_getscheduler(0) != static_cast<int>(before.sched_policy)) return 7;
    if (sched_setparam(0, &fifo) != 0) return 8;
    if (setpriority(PRIO_PROCESS, 0, -10) != 0 || getpriority(PRIO_PROCESS, 0) != nice_before)
      return 9;
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

// A candidate cannot open anything under /proc for writing (Landlock), so
// the oom_score_adj of 1000 its rank set stays (red team
// oom_adj_reset_blame: with it back at 0 and memory in an unmapped memfd the
// OOM killer took the judge); files elsewhere stay writable.
// Writes go only beneath the folders the judge names (red team round 15
// r15_judge_binary_write: a plain user's launch could create, rename and
// remove files wherever that user can, and replaced the worker binary).
TEST(Harden, WritesGoOnlyBeneathTheWritableFolders) {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U /*VERSION*/);
  if (abi < 1) GTEST_SKIP() << "no Landlock in this kernel";
  std::string ok_dir = ::testing::TempDir() + "/harden_ok_XXXXXX";
  std::string other = ::testing::TempDir() + "/harden_other_XXXXXX";
  ASSERT_NE(mkdtemp(ok_dir.data()), nullptr);
  ASSERT_NE(mkdtemp(other.data()), nullptr);
  // A file of another evaluation (the worker binary, another candidate).
  const std::string victim = other + "/victim";
  { std::ofstream(victim) << "trusted"; }
  const int rc = InChild([&] {
    // "/proc" among the writable folders is refused (its mount never gets a
    // rule), and the ruleset is enforced all the same.
    if (!HardenCandidateProcess(false, true, true, true, {ok_dir, "/proc"}).ok()) return 10;
    for (const char* path : {"/proc/self/oom_score_adj", "/proc/self/coredump_filter",
                             "/proc/self/comm"}) {
      const int fd = open(path, O_WRONLY | O_CLOEXEC);
      if (fd >= 0 || errno != EACCES) {
        fprintf(stderr, "candidate opened %s for writing\n", path);
        return 11;
      }
    }
    // Through another name of the same file.
    const int dfd = open("/proc/self", O_PATH | O_DIRECTORY);
    if (dfd < 0) return 12;
    if (openat(dfd, "oom_score_adj", O_WRONLY) >= 0) return 13;
    // Reading /proc and writing beneath the writable folder still work.
    if (open("/proc/self/status", O_RDONLY) < 0) return 14;
    std::string name = ok_dir + "/f_XXXXXX";
    const int w = mkstemp(name.data());
    if (w < 0 || write(w, "x", 1) != 1) return 15;
    if (rename(name.c_str(), (ok_dir + "/g").c_str()) != 0) return 16;
    if (unlink((ok_dir + "/g").c_str()) != 0) return 17;
    if (open("/dev/null", O_WRONLY | O_TRUNC) < 0) return 18;
    // Nothing elsewhere: write, create, remove, rename over, link, truncate.
    if (open(victim.c_str(), O_WRONLY) >= 0) return 20;
    if (open((other + "/new").c_str(), O_WRONLY | O_CREAT, 0600) >= 0) return 21;
    if (unlink(victim.c_str()) == 0) return 22;
    const std::string forged = ok_dir + "/forged";
    { const int f = open(forged.c_str(), O_WRONLY | O_CREAT, 0700); if (f < 0) return 23; close(f); }
    if (rename(forged.c_str(), victim.c_str()) == 0) return 24;
    if (link(forged.c_str(), (other + "/linked").c_str()) == 0) return 25;
    if (symlink("/etc/passwd", (other + "/sym").c_str()) == 0) return 26;
    if (mkdir((other + "/d").c_str(), 0700) == 0) return 27;
    if (abi >= 3 && truncate(victim.c_str(), 0) == 0) return 28;
    // Nor its metadata, which Landlock has no right for (red team round 16
    // r16_metadata_write made the worker binary non-executable): modes,
    // owners, times, extended attributes, by every call that sets them.
    if (chmod(victim.c_str(), 0600) == 0 || errno != EPERM) return 30;
    if (syscall(452 /*fchmodat2*/, AT_FDCWD, victim.c_str(), 0600, 0) == 0 || errno != EPERM)
      return 31;
    if (chown(victim.c_str(), getuid(), getgid()) == 0 || errno != EPERM) return 32;
    if (utimensat(AT_FDCWD, victim.c_str(), nullptr, 0) == 0 || errno != EPERM) return 33;
    if (setxattr(victim.c_str(), "user.x", "1", 1, 0) == 0 || errno != EPERM) return 34;
    return 0;
  });
  EXPECT_EQ(rc, 0);
  std::ifstream in(victim);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "trusted");
  std::filesystem::remove_all(ok_dir);
  std::filesystem::remove_all(other);
}

// Reading the user's terminals (red team round 17 r17_pts_read): a pty the
// launching user holds is not readable by a host candidate, nor /dev/tty;
// ordinary files, /proc, /sys and the random devices are.
TEST(Harden, TheUsersTerminalsCannotBeRead) {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U /*VERSION*/);
  if (abi < 1) GTEST_SKIP() << "no Landlock in this kernel";
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) GTEST_SKIP() << "no ptys here";
  const std::string pts = ptsname(master);
  const int rc = InChild([&] {
    if (!HardenCandidateProcess().ok()) return 10;
    const int fd = open(pts.c_str(), O_RDONLY | O_NOCTTY);
    if (fd >= 0 || errno != EACCES) return 11;
    if (open("/dev/tty", O_RDONLY | O_NOCTTY) >= 0) return 12;
    for (const char* ok : {"/etc/passwd", "/proc/self/status", "/dev/urandom", "/dev/null"})
      if (open(ok, O_RDONLY | O_CLOEXEC) < 0) {
        fprintf(stderr, "candidate could not read %s: %s\n", ok, strerror(errno));
        return 13;
      }
    if (access("/sys/devices/system/cpu", R_OK) == 0 &&
        open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC) < 0)
      return 14;
    return 0;
  });
  close(master);
  EXPECT_EQ(rc, 0);
}

// Objects that outlive the process without a path, and the kernel's
// keyrings (red team round 17 r17_ipc_leftover, r17_keyring_read); and a
// datagram pair, which could be aimed at any named socket (r17_dgram_sendto).
// Red team round 25: no secret memory (memfd_secret splits the kernel's
// direct map for good), no core dump (a pipe core_pattern starts a root
// helper outside the sandbox: RLIMIT_CORE 1, fixed), no freeing of a
// segment's pages under the judge (hole punching, MADV_REMOVE).
TEST(Harden, NoSecretMemoryNoCoreDumpNoHolePunching) {
  // 1, or 0 where the test runs under a hard limit of 0 (it cannot be raised).
  rlimit inherited{};
  ASSERT_EQ(getrlimit(RLIMIT_CORE, &inherited), 0);
  const rlim_t want = inherited.rlim_max < 1 ? 0 : 1;
  const int rc = InChild([want] {
    if (!HardenCandidateProcess().ok()) return 10;
    // 447 on x86_64 and aarch64; refused before the kernel's own check.
    if (const long fd = syscall(447, 0); fd >= 0) {
      close(static_cast<int>(fd));
      return 11;
    } else if (errno != EPERM) {
      return 11;
    }
    rlimit core{};
    if (getrlimit(RLIMIT_CORE, &core) != 0 || core.rlim_cur != want || core.rlim_max != want)
      return 12;
    const rlimit zero{0, 0};
    if (setrlimit(RLIMIT_CORE, &zero) == 0 || errno != EPERM) return 13;
    if (syscall(SYS_setrlimit, RLIMIT_CORE, &zero) == 0 || errno != EPERM) return 14;
    if (prlimit(0, RLIMIT_CORE, &zero, nullptr) == 0 || errno != EPERM) return 15;
    rlimit read_back{};
    if (prlimit(0, RLIMIT_CORE, nullptr, &read_back) != 0 || read_back.rlim_cur != want) return 16;
    // Other limits of its own stay its own.
    rlimit files{};
    if (getrlimit(RLIMIT_NOFILE, &files) != 0) return 17;
    files.rlim_cur = std::min<rlim_t>(files.rlim_cur, 512);
    if (setrlimit(RLIMIT_NOFILE, &files) != 0) return 18;
    // Allocating stays; freeing pages does not.
    const int fd = memfd_create("pkf-harden", MFD_CLOEXEC);
    if (fd < 0) return 19;
    if (fallocate(fd, 0, 0, 1 << 16) != 0) return 20;
    if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096) == 0 || errno != EPERM)
      return 21;
    void* m = mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return 22;
    static_cast<volatile char*>(m)[0] = 1;
    if (madvise(m, 4096, MADV_REMOVE) == 0 || errno != EPERM) return 23;
    if (madvise(m, 4096, MADV_DONTNEED) != 0) return 24;
    munmap(m, 1 << 16);
    close(fd);
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

// Red team round 26: file_setattr (the path form of FS_IOC_FSSETXATTR,
// Linux 6.17; unknown to this libseccomp, refused by number), dropping a
// file's page cache, write-lifetime hints, BPF; and syscalls newer than the
// filter get ENOSYS.
TEST(Harden, NoFileAttributesNoCacheEvictionNoWriteHints) {
  const int rc = InChild([] {
    if (!HardenCandidateProcess().ok()) return 10;
#if defined(__x86_64__)
    // A bad size: EINVAL from a kernel that has it, ENOSYS from one that has
    // not, EPERM from the filter alone.
    if (syscall(469, AT_FDCWD, "/etc/hostname", nullptr, 0, 0) == 0 || errno != EPERM) return 11;
    if (syscall(500, 0, 0, 0) == 0 || errno != ENOSYS) return 12;
#endif
    const int fd = memfd_create("pkf-harden", MFD_CLOEXEC);
    if (fd < 0) return 13;
    if (ftruncate(fd, 1 << 16) != 0) return 14;
    if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != EPERM) return 15;
    if (posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED) != 0) return 16;
    uint64_t hint = 2;  // RWH_WRITE_LIFE_SHORT
    if (fcntl(fd, 1036 /*F_SET_RW_HINT*/, &hint) == 0 || errno != EPERM) return 17;
    if (syscall(SYS_bpf, 0, nullptr, 0) == 0 || errno != EPERM) return 18;
    close(fd);
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

TEST(Harden, NoSysVIpcNoMessageQueuesNoKeysNoDatagramPairs) {
  const int rc = InChild([] {
    if (!HardenCandidateProcess().ok()) return 10;
    // (An object made despite the filter is removed again: a failing test
    // leaves nothing on the host.)
    if (const long id = syscall(SYS_shmget, 0 /*IPC_PRIVATE*/, 4096, 01600); id >= 0) {
      syscall(SYS_shmctl, id, 0 /*IPC_RMID*/, nullptr);
      return 11;
    } else if (errno != EPERM) {
      return 11;
    }
    if (const long id = syscall(SYS_msgget, 0, 01600); id >= 0) {
      syscall(SYS_msgctl, id, 0 /*IPC_RMID*/, nullptr);
      return 12;
    } else if (errno != EPERM) {
      return 12;
    }
    if (const long id = syscall(SYS_semget, 0, 1, 01600); id >= 0) {
      syscall(SYS_semctl, id, 0, 0 /*IPC_RMID*/);
      return 13;
    } else if (errno != EPERM) {
      return 13;
    }
    if (syscall(SYS_mq_open, "pkforge_test_mq", O_CREAT | O_RDWR, 0600, nullptr) >= 0 ||
        errno != EPERM)
      return 14;
    if (syscall(SYS_keyctl, 0 /*KEYCTL_GET_KEYRING_ID*/, -3 /*session*/, 0) >= 0 ||
        errno != EPERM)
      return 15;
    if (syscall(SYS_add_key, "user", "pkforge_test", "x", 1, -3) >= 0 || errno != EPERM)
      return 16;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == 0 || errno != EPERM) return 17;
    // SOCK_RAW is a datagram pair in af_unix (round 17 r17_dgram_raw).
    if (socketpair(AF_UNIX, SOCK_RAW, 0, sv) == 0 || errno != EPERM) return 20;
    if (socketpair(AF_UNIX, SOCK_RDM | SOCK_NONBLOCK, 0, sv) == 0 || errno != EPERM) return 21;
    // Nor a performance counter, even on itself.
    if (syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0) >= 0 || errno != EPERM) return 22;
    // Stream pairs stay (they reach no one).
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 18;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) return 19;
    // A pair's socket takes no name and connects nowhere.
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "pkf-harden-%d", getpid());
    const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 12);
    if (bind(sv[0], reinterpret_cast<sockaddr*>(&a), len) == 0 || errno != EPERM) return 23;
    if (connect(sv[0], reinterpret_cast<sockaddr*>(&a), len) == 0 || errno != EPERM) return 24;
    // No file lock, even on a file it may read (round 18: another program's
    // lock held for the ranks' lifetime).
    const int f = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
    if (f >= 0) {
      if (flock(f, LOCK_SH | LOCK_NB) == 0 || errno != EPERM) return 25;
      struct flock lk{};
      lk.l_type = F_RDLCK;
      lk.l_whence = SEEK_SET;
      if (fcntl(f, F_SETLK, &lk) == 0 || errno != EPERM) return 26;
      if (fcntl(f, F_OFD_SETLK, &lk) == 0 || errno != EPERM) return 27;
      close(f);
    }
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

// Typing into a terminal: even one that is the candidate's controlling
// terminal (candidate ranks give theirs up with TIOCNOTTY, so they have none;
// red team round 16 r16_tty_inject typed a command the caller's shell ran).
// Round 19: a unix-socket garbage cycle (descriptors passed into a pair's
// own queue) kept memory and a file lease past the evaluation; a lease on a
// read-only descriptor blocked root's writers 45 s; inode flags were set
// through a read-only descriptor. Each exit code names the refusal missing.
TEST(Harden, NoDescriptorPassingNoLeasesNoInodeFlags) {
  const int rc = InChild([] {
    if (!HardenCandidateProcess().ok()) return 10;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 11;
    const int mf = memfd_create("pkf-harden", MFD_CLOEXEC);
    if (mf < 0) return 12;
    alignas(cmsghdr) char buf[CMSG_SPACE(sizeof(int))] = {};
    char x = 'x';
    iovec io{&x, 1};
    msghdr m{};
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    m.msg_control = buf;
    m.msg_controllen = sizeof buf;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &mf, sizeof mf);
    if (sendmsg(sv[0], &m, 0) >= 0 || errno != EPERM) return 13;
    mmsghdr mm{};
    mm.msg_hdr = m;
    if (sendmmsg(sv[0], &mm, 1, 0) >= 0 || errno != EPERM) return 14;
    // Bytes still go through the pair.
    if (send(sv[0], "y", 1, 0) != 1) return 15;
    // No receive or send timeout on it (round 21: a timed read looked like a
    // helper waiting for work); other options stay.
    timeval tv{0, 10000};
    if (setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 || errno != EPERM)
      return 23;
    if (setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0 || errno != EPERM)
      return 24;
    const int size = 1 << 16;
    if (setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof size) != 0) return 25;
    // Leases and directory notifications, also with high bits in the command.
    if (fcntl(mf, F_SETLEASE, F_RDLCK) == 0 || errno != EPERM) return 16;
    if (syscall(SYS_fcntl, mf, (1ULL << 32) | F_SETLEASE, F_WRLCK) == 0 || errno != EPERM)
      return 17;
    if (fcntl(mf, F_NOTIFY, DN_MODIFY) == 0 || errno != EPERM) return 18;
    // Inode flags and attributes (FS_IOC_GETFLAGS is refused with the rest
    // of type 'f').
    int flags = 0;
    if (ioctl(mf, FS_IOC_GETFLAGS, &flags) == 0 || errno != EPERM) return 19;
    if (ioctl(mf, FS_IOC_SETFLAGS, &flags) == 0 || errno != EPERM) return 20;
    fsxattr fa{};
    if (ioctl(mf, FS_IOC_FSSETXATTR, &fa) == 0 || errno != EPERM) return 21;
    // Core scheduling cookies.
    unsigned long cookie = 0;
    if (prctl(PR_SCHED_CORE, 0 /*PR_SCHED_CORE_GET*/, 0, 0 /*PIDTYPE_PID*/, &cookie) == 0 ||
        errno != EPERM)
      return 22;
    return 0;
  });
  EXPECT_EQ(rc, 0) << "a round-19 refusal is missing (exit code: see the test)";
}

TEST(Harden, NothingCanBeTypedIntoATerminal) {
  const int rc = InChild([] {
    const int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return 0;  // no ptys here
    setsid();
    const int slave = open(ptsname(master), O_RDWR);
    if (slave < 0 || ioctl(slave, TIOCSCTTY, 0) != 0) return 0;
    if (!HardenCandidateProcess().ok()) return 10;
    char c = 'x';
    if (ioctl(slave, TIOCSTI, &c) == 0) return 11;
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace pkforge::kernels
