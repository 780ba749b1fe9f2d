// RED TEAM round 25 (recon): what a host candidate rank can see and do, from
// pkf_setup: its descriptors, its mappings, its credentials, which files of
// the other processes (judge, reference ranks) /proc opens, and which
// syscalls of the classes not yet tried succeed (fallocate punch on its data
// segment, fadvise on the worker binary, membarrier, memfd_secret, ioprio,
// get_mempolicy, mlock, userfaultfd, name_to_handle_at, sched_getattr of a
// reference rank, kcmp). Writes $PKF_REDTEAM_DIR/recon.<rank>.<pid>; then the
// honest allreduce. EXPECT: OK (a probe; the findings are in the file).
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/resource.h>

#include "kernels/testdata/redteam/redteam.h"

namespace {

std::string g_log;

void Logf(const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g_log += buf;
}

void Flush(int rank) {
  const char* dir = getenv("PKF_REDTEAM_DIR");
  if (dir == NULL) return;
  char path[512];
  snprintf(path, sizeof path, "%s/recon.%d.%d", dir, rank, (int)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t w = write(fd, g_log.data(), g_log.size());
  (void)w;
  close(fd);
}

std::string FirstLine(const std::string& s) {
  size_t n = s.find('\n');
  std::string l = s.substr(0, n == std::string::npos ? 120 : std::min<size_t>(n, 120));
  for (char& c : l)
    if ((unsigned char)c < 32) c = ' ';
  return l;
}

void Recon(int rank) {
  Logf("pid %d ppid %d uid %d euid %d\n", (int)getpid(), (int)getppid(), (int)getuid(),
       (int)geteuid());
  std::string st = rt_read("/proc/self/status");
  for (const char* key : {"Cap", "Seccomp", "NoNewPrivs", "Threads", "Cpus_allowed_list"}) {
    size_t p = 0;
    while ((p = st.find(key, p)) != std::string::npos) {
      Logf("  %s\n", FirstLine(st.substr(p)).c_str());
      p += 1;
    }
  }
  // Descriptors.
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char link[512] = {0};
      std::string p = std::string("/proc/self/fd/") + e->d_name;
      ssize_t n = readlink(p.c_str(), link, sizeof link - 1);
      int fl = fcntl(atoi(e->d_name), F_GETFL);
      Logf("fd %s -> %s flags 0x%x\n", e->d_name, n > 0 ? link : "?", fl);
    }
    closedir(d);
  }
  // Mappings of shared segments.
  std::string maps = rt_read("/proc/self/maps");
  size_t p = 0;
  while (p < maps.size()) {
    size_t n = maps.find('\n', p);
    std::string l = maps.substr(p, n - p);
    if (l.find("pkf") != std::string::npos || l.find("memfd") != std::string::npos)
      Logf("map %s\n", l.c_str());
    if (n == std::string::npos) break;
    p = n + 1;
  }
  // Other processes: which /proc files open.
  std::vector<int> pids;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      int pid = atoi(e->d_name);
      if (pid > 0 && pid != getpid()) pids.push_back(pid);
    }
    closedir(d);
  }
  for (int pid : pids) {
    std::string cmd = rt_read("/proc/" + std::to_string(pid) + "/cmdline");
    for (char& c : cmd)
      if (c == 0) c = ' ';
    if (cmd.find("pkforge") == std::string::npos && cmd.find("rank") == std::string::npos)
      continue;
    Logf("proc %d: %s\n", pid, cmd.substr(0, 160).c_str());
    for (const char* f : {"stat", "status", "schedstat", "io", "environ", "wchan", "stack",
                          "syscall", "timerslack_ns", "sched", "limits", "cgroup", "mountinfo",
                          "fdinfo/0", "personality", "auxv", "numa_maps", "smaps_rollup",
                          "statm", "loginuid", "sessionid", "ns/pid", "attr/current",
                          "task", "maps", "mem", "fd/1", "cwd/.", "root/."}) {
      std::string path = "/proc/" + std::to_string(pid) + "/" + f;
      int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        Logf("   %-14s open: %s\n", f, strerror(errno));
        continue;
      }
      char buf[256] = {0};
      ssize_t n = read(fd, buf, sizeof buf - 1);
      close(fd);
      Logf("   %-14s read %zd %s\n", f, n, n > 0 ? FirstLine(buf).c_str() : strerror(errno));
    }
    struct sched_param sp;
    Logf("   getpriority %d sched_getparam %d sched_getscheduler %d\n",
         getpriority(PRIO_PROCESS, pid), sched_getparam(pid, &sp), sched_getscheduler(pid));
    errno = 0;
    long io = syscall(SYS_ioprio_get, 1, pid);
    Logf("   ioprio_get %ld (%s)\n", io, strerror(errno));
    errno = 0;
    long k = syscall(SYS_kcmp, getpid(), pid, 0, 0, 0);
    Logf("   kcmp %ld (%s)\n", k, strerror(errno));
  }
  // Syscalls.
  auto res = [](const char* what, long r) {
    Logf("sys %-28s -> %ld (%s)\n", what, r, r < 0 ? strerror(errno) : "ok");
  };
  errno = 0;
  res("membarrier query", syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0));
  errno = 0;
  res("membarrier reg global exp", syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0));
  errno = 0;
  res("membarrier global", syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0));
  errno = 0;
  res("memfd_secret", syscall(447, 0));
  errno = 0;
  res("userfaultfd user-mode", syscall(SYS_userfaultfd, O_CLOEXEC | 1 /*UFFD_USER_MODE_ONLY*/));
  errno = 0;
  res("mlock 1MiB", [] {
    void* m = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    long r = mlock(m, 1 << 20);
    munmap(m, 1 << 20);
    return r;
  }());
  errno = 0;
  {
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    res("open /proc/self/exe", fd);
    errno = 0;
    if (fd >= 0) res("posix_fadvise DONTNEED exe", -posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
    errno = 0;
    if (fd >= 0) res("readahead exe", syscall(SYS_readahead, fd, 0, 1 << 20));
    if (fd >= 0) close(fd);
  }
  errno = 0;
  res("fallocate punch fd7 (data) 0 len0", fallocate(7, 3 /*KEEP_SIZE|PUNCH_HOLE*/, 1 << 30, 4096));
  errno = 0;
  res("fcntl F_GET_SEALS fd7", fcntl(7, 1034));
  errno = 0;
  res("fcntl F_GET_SEALS fd5", fcntl(5, 1034));
  errno = 0;
  res("fcntl F_GET_SEALS fd6", fcntl(6, 1034));
  errno = 0;
  res("fcntl F_GETPIPE_SZ fd3", fcntl(3, 1032));
  errno = 0;
  res("fcntl F_GETPIPE_SZ fd4", fcntl(4, 1032));
  errno = 0;
  {
    unsigned long mask = 0;
    int mode = 0;
    res("get_mempolicy", syscall(SYS_get_mempolicy, &mode, &mask, 64, 0, 0));
  }
  errno = 0;
  res("sched_getattr ppid", [] {
    char a[128] = {0};
    *(uint32_t*)a = 56;
    return syscall(SYS_sched_getattr, getppid(), a, 56, 0);
  }());
  errno = 0;
  res("syslog read-all size", syscall(SYS_syslog, 10, 0, 0));
  errno = 0;
  res("prctl PR_SET_NAME", prctl(PR_SET_NAME, "x) R 1 1 1", 0, 0, 0));
  errno = 0;
  res("getrlimit nofile", [] {
    struct rlimit r;
    getrlimit(RLIMIT_NOFILE, &r);
    Logf("  nofile %lu/%lu\n", (unsigned long)r.rlim_cur, (unsigned long)r.rlim_max);
    getrlimit(RLIMIT_MEMLOCK, &r);
    Logf("  memlock %lu/%lu\n", (unsigned long)r.rlim_cur, (unsigned long)r.rlim_max);
    getrlimit(RLIMIT_NPROC, &r);
    Logf("  nproc %lu/%lu\n", (unsigned long)r.rlim_cur, (unsigned long)r.rlim_max);
    return 0L;
  }());
  errno = 0;
  res("open /tmp/x O_CREAT", open("/tmp/r25_recon_probe", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  errno = 0;
  res("mkfifo in writable", [] {
    const char* dir = getenv("PKF_REDTEAM_DIR");
    std::string p = std::string(dir ? dir : "/tmp") + "/r25_fifo";
    return (long)mknod(p.c_str(), S_IFIFO | 0666, 0);
  }());
  errno = 0;
  res("open /dev/shm O_CREAT", open("/dev/shm/r25_probe", O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  errno = 0;
  res("inotify_init1", syscall(SYS_inotify_init1, O_CLOEXEC));
  errno = 0;
  res("fanotify_init", syscall(SYS_fanotify_init, 0, 0));
  errno = 0;
  res("pidfd_open self", syscall(SYS_pidfd_open, getpid(), 0));
  errno = 0;
  res("epoll_create1", syscall(SYS_epoll_create1, O_CLOEXEC));
  errno = 0;
  res("eventfd2", syscall(SYS_eventfd2, 0, O_CLOEXEC));
  errno = 0;
  res("signalfd4", [] {
    sigset_t s;
    sigemptyset(&s);
    return syscall(SYS_signalfd4, -1, &s, 8, O_CLOEXEC);
  }());
  errno = 0;
  res("bpf", syscall(SYS_bpf, 0, nullptr, 0));
  errno = 0;
  res("quotactl", syscall(SYS_quotactl, 0, nullptr, 0, nullptr));
  errno = 0;
  res("mount", syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, nullptr));
  errno = 0;
  res("swapoff", syscall(SYS_swapoff, "/x"));
  errno = 0;
  res("sched_setaffinity self all", [] {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(0, &s);
    CPU_SET(1, &s);
    return (long)sched_setaffinity(0, sizeof s, &s);
  }());
  {
    cpu_set_t s;
    sched_getaffinity(0, sizeof s, &s);
    Logf("  affinity after: cpu0 %d cpu1 %d\n", CPU_ISSET(0, &s), CPU_ISSET(1, &s));
  }
  (void)rank;
}

}  // namespace

extern "C" int pkf_setup(pkf_context* ctx) {
  Recon(ctx->rank);
  Flush(ctx->rank);
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
