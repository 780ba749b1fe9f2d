// sandbox_probe: the adversarial program the sandbox tests run inside the
// sandbox. Each subcommand tries to break one promise and reports what
// happened on stdout as "key=value" lines; the tests assert on those lines
// (and on the host side effects). Exit status 0 means "the attack worked"
// only where a subcommand says so; see each one.
//
// Deliberately plain C with raw system calls: it must not depend on anything
// that the sandbox might legitimately hide.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static int Usage(void) {
  fprintf(stderr, "usage: sandbox_probe SUBCOMMAND [ARGS]\n");
  return 2;
}

static void Report(const char* key, int rc, int err) {
  if (rc == 0) {
    printf("%s=ok\n", key);
  } else {
    printf("%s=%s\n", key, strerrorname_np(err) ? strerrorname_np(err) : "E?");
  }
  fflush(stdout);
}

// Runs `expr` and then reads errno (function-argument order is unspecified).
#define REPORT(key, expr)   \
  do {                      \
    int rc_ = (expr);       \
    int err_ = errno;       \
    Report(key, rc_, err_); \
  } while (0)

static void SleepMs(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// connect HOST PORT: TCP connect. Exit 0 iff connected.
static int CmdConnect(const char* host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  inet_pton(AF_INET, host, &addr.sin_addr);
  int rc = connect(fd, (struct sockaddr*)&addr, sizeof(addr));
  REPORT("connect", rc);
  close(fd);
  return rc == 0 ? 0 : 1;
}

// connect-abstract NAME: abstract unix socket. Exit 0 iff connected.
static int CmdConnectAbstract(const char* name) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  size_t len = strlen(name);
  memcpy(addr.sun_path + 1, name, len);
  int rc = connect(fd, (struct sockaddr*)&addr, (socklen_t)(sizeof(sa_family_t) + 1 + len));
  REPORT("connect_abstract", rc);
  close(fd);
  return rc == 0 ? 0 : 1;
}

// serve PORT: accept one connection on 127.0.0.1:PORT, answer "pong".
static int CmdServe(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr*)&addr, sizeof(addr)) != 0 || listen(fd, 4) != 0) {
    REPORT("serve", -1);
    return 1;
  }
  int c = accept(fd, NULL, NULL);
  char buf[16] = {0};
  if (c < 0 || read(c, buf, 4) != 4 || write(c, "pong", 4) != 4) return 1;
  close(c);
  close(fd);
  return 0;
}

// talk PORT: connect to 127.0.0.1:PORT (retrying while the server starts),
// send "ping", expect "pong". Exit 0 iff the exchange worked.
static int CmdTalk(int port) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr*)&addr, sizeof(addr)) == 0) {
      char buf[8] = {0};
      int ok = write(fd, "ping", 4) == 4 && read(fd, buf, 4) == 4 && memcmp(buf, "pong", 4) == 0;
      close(fd);
      printf("loopback=%s\n", ok ? "ok" : "bad-reply");
      return ok ? 0 : 1;
    }
    close(fd);
    SleepMs(10);
  }
  printf("loopback=unreachable\n");
  return 1;
}

// ifaces: list network interfaces.
static int CmdIfaces(void) {
  struct ifaddrs* list;
  if (getifaddrs(&list) != 0) {
    REPORT("ifaces", -1);
    return 1;
  }
  for (struct ifaddrs* i = list; i; i = i->ifa_next) {
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
      char text[64];
      inet_ntop(AF_INET, &((struct sockaddr_in*)i->ifa_addr)->sin_addr, text, sizeof(text));
      printf("iface=%s %s\n", i->ifa_name, text);
    }
  }
  freeifaddrs(list);
  return 0;
}

// read PATH: print the file. Exit 0 iff it could be read.
static int CmdRead(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    REPORT("read", -1);
    return 1;
  }
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof(buf));
  if (n < 0) {
    REPORT("read", -1);
    return 1;
  }
  printf("read=ok\ncontent=%.*s\n", (int)n, buf);
  close(fd);
  return 0;
}

// write PATH: create/overwrite PATH. Exit 0 iff it worked.
static int CmdWrite(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    REPORT("write", -1);
    return 1;
  }
  int rc = write(fd, "pwned\n", 6) == 6 ? 0 : -1;
  REPORT("write", rc);
  close(fd);
  return rc == 0 ? 0 : 1;
}

// open-write PATH: open PATH for writing and close it again, writing nothing
// (safe to aim at sysctls and sysrq-trigger even if the defence failed).
// Exit 0 iff the open succeeded.
static int CmdOpenWrite(const char* path) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  REPORT("open_write", fd < 0 ? -1 : 0);
  if (fd >= 0) close(fd);
  return fd < 0 ? 1 : 0;
}

// symlink TARGET LINK: plant LINK -> TARGET, then read through it.
static int CmdSymlink(const char* target, const char* link) {
  unlink(link);
  if (symlink(target, link) != 0) {
    REPORT("symlink", -1);
    return 1;
  }
  return CmdRead(link);
}

// env: print the environment exactly.
static int CmdEnv(void) {
  for (char** e = environ; *e; ++e) printf("env=%s\n", *e);
  return 0;
}

// procfs-dump: every /proc/<pid>/{cmdline,environ} we can read, flattened.
static int CmdProcfsDump(void) {
  DIR* d = opendir("/proc");
  struct dirent* e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const char* files[] = {"cmdline", "environ"};
    for (int f = 0; f < 2; ++f) {
      char path[300];
      snprintf(path, sizeof(path), "/proc/%s/%s", e->d_name, files[f]);
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      char buf[65536];
      ssize_t n = read(fd, buf, sizeof(buf) - 1);
      close(fd);
      if (n <= 0) continue;
      for (ssize_t i = 0; i < n; ++i) {
        if (buf[i] == 0) buf[i] = ' ';
      }
      buf[n] = 0;
      printf("proc %s %s=%s\n", e->d_name, files[f], buf);
    }
  }
  if (d) closedir(d);
  return 0;
}

// forkbomb MAX: fork children that stay alive until fork fails or MAX is
// reached; report the count and the error. Exit 0.
static int CmdForkBomb(int max) {
  int count = 0, err = 0;
  for (; count < max; ++count) {
    pid_t p = fork();
    if (p < 0) {
      err = errno;
      break;
    }
    if (p == 0) {
      for (;;) pause();
    }
  }
  printf("forked=%d\nfork_error=%s\n", count, err ? strerrorname_np(err) : "none");
  fflush(stdout);
  return 0;
}

// daemon TOKEN DIR MODE: fork, setsid, fork again; the grandchild re-execs
// itself as "linger TOKEN DIR" (so the host can find it by its command line).
// MODE "exit": the original process exits at once. MODE "stay": it sleeps
// forever (the deadline must kill everything).
static int CmdDaemon(const char* self, const char* token, const char* dir, const char* mode) {
  pid_t p = fork();
  if (p == 0) {
    setsid();
    pid_t q = fork();
    if (q == 0) {
      int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
      signal(SIGHUP, SIG_IGN);
      signal(SIGTERM, SIG_IGN);
      execl(self, self, "linger", token, dir, (char*)NULL);
      _exit(1);
    }
    _exit(0);
  }
  waitpid(p, NULL, 0);
  // Wait until the grandchild says it is running.
  char ready[4096];
  snprintf(ready, sizeof(ready), "%s/ready", dir);
  for (int i = 0; i < 500 && access(ready, F_OK) != 0; ++i) SleepMs(10);
  printf("daemon=started\n");
  fflush(stdout);
  if (strcmp(mode, "stay") == 0) {
    for (;;) pause();
  }
  return 0;
}

// linger TOKEN DIR: write DIR/ready, then live forever ignoring signals.
static int CmdLinger(const char* token, const char* dir) {
  (void)token;
  char path[4096];
  snprintf(path, sizeof(path), "%s/ready", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) close(fd);
  for (;;) pause();
  return 0;
}

// attack-pid PID: try to reach a host process: kill(PID, SIGKILL),
// ptrace(ATTACH), process_vm_readv, then kill(-1, SIGKILL) (everything we
// may signal). Exit 0.
static int CmdAttackPid(int pid) {
  REPORT("kill", kill(pid, SIGKILL));
  REPORT("ptrace_attach", (int)ptrace(PTRACE_ATTACH, pid, NULL, NULL));
  char buf[16];
  struct iovec local = {buf, sizeof(buf)}, remote = {(void*)0x400000, sizeof(buf)};
  ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  REPORT("process_vm_readv", n < 0 ? -1 : 0);
  // A child of our own: ptrace must fail even where the target is reachable.
  pid_t child = fork();
  if (child == 0) {
    for (;;) pause();
  }
  REPORT("ptrace_own_child", (int)ptrace(PTRACE_ATTACH, child, NULL, NULL));
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  signal(SIGTERM, SIG_IGN);
  REPORT("kill_all", kill(-1, SIGTERM));
  return 0;
}

// syscalls: try the kernel interfaces the seccomp filter denies.
static int CmdSyscalls(void) {
  REPORT("unshare_user", unshare(CLONE_NEWUSER));
  REPORT("unshare_net", unshare(CLONE_NEWNET));
  REPORT("mount", mount("none", "/tmp", "tmpfs", 0, NULL));
  REPORT("bpf", (int)syscall(SYS_bpf, 0, NULL, 0));
  REPORT("keyctl", (int)syscall(SYS_keyctl, 0, 0, 0, 0, 0));
  REPORT("userfaultfd", (int)syscall(SYS_userfaultfd, 0) < 0 ? -1 : 0);
  REPORT("io_uring_setup", (int)syscall(SYS_io_uring_setup, 1, NULL) < 0 ? -1 : 0);
  REPORT("perf_event_open", (int)syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0) < 0 ? -1 : 0);
  REPORT("clone3", (int)syscall(SYS_clone3, NULL, 0) < 0 ? -1 : 0);
  REPORT("setns", (int)syscall(SYS_setns, 0, 0));
  REPORT("chroot", chroot("/tmp"));
  // A plain fork (clone without namespace flags) must still work.
  pid_t p = fork();
  if (p == 0) _exit(0);
  REPORT("fork", p > 0 ? 0 : -1);
  if (p > 0) waitpid(p, NULL, 0);
  return 0;
}

// spin: burn CPU forever.
static int CmdSpin(void) {
  volatile uint64_t x = 0;
  for (;;) x++;
  return 0;
}

// fsize BYTES PATH: write BYTES bytes to PATH, SIGXFSZ ignored. Exit 0 iff all written.
static int CmdFsize(long bytes, const char* path) {
  signal(SIGXFSZ, SIG_IGN);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    REPORT("fsize", -1);
    return 1;
  }
  static char chunk[65536];
  long written = 0;
  int err = 0;
  while (written < bytes) {
    ssize_t n = write(fd, chunk, sizeof(chunk));
    if (n < 0) {
      err = errno;
      break;
    }
    written += n;
  }
  printf("written=%ld\nfsize_error=%s\n", written, err ? strerrorname_np(err) : "none");
  close(fd);
  return written >= bytes ? 0 : 1;
}

// nofile N: open /dev/null N times. Exit 0 iff all opened.
static int CmdNofile(int n) {
  int opened = 0, err = 0;
  for (; opened < n; ++opened) {
    if (open("/dev/null", O_RDONLY) < 0) {
      err = errno;
      break;
    }
  }
  printf("opened=%d\nnofile_error=%s\n", opened, err ? strerrorname_np(err) : "none");
  return opened >= n ? 0 : 1;
}

// memhog MB: allocate and touch MB mebibytes. Exit 0 iff it got all of it.
static int CmdMemhog(long mb) {
  long got = 0;
  for (; got < mb; ++got) {
    char* p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      printf("memhog_error=%s\n", strerrorname_np(errno));
      break;
    }
    memset(p, 0x5a, 1 << 20);
    if (got % 64 == 0) {
      printf("allocated_mb=%ld\n", got);
      fflush(stdout);
    }
  }
  printf("allocated_mb=%ld\n", got);
  return got >= mb ? 0 : 1;
}

// spew BYTES: write BYTES bytes of 'x' to stdout, then "done" to stderr.
static int CmdSpew(long bytes) {
  static char chunk[65536];
  memset(chunk, 'x', sizeof(chunk));
  long left = bytes;
  while (left > 0) {
    ssize_t n = write(1, chunk, left < (long)sizeof(chunk) ? (size_t)left : sizeof(chunk));
    if (n <= 0) return 1;
    left -= n;
  }
  fprintf(stderr, "done\n");
  return 0;
}

// shm-write NAME TEXT / shm-read NAME: POSIX shared memory in /dev/shm.
static int CmdShmWrite(const char* name, const char* text) {
  int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ftruncate(fd, 4096) != 0) {
    REPORT("shm_write", -1);
    return 1;
  }
  char* p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  snprintf(p, 4096, "%s", text);
  printf("shm_write=ok\n");
  return 0;
}
static int CmdShmRead(const char* name) {
  int fd = shm_open(name, O_RDONLY, 0);
  if (fd < 0) {
    REPORT("shm_read", -1);
    return 1;
  }
  char* p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
  printf("shm_read=ok\nshm_content=%s\n", p);
  return 0;
}

// sysv-write KEY TEXT / sysv-read KEY: System V shared memory (IPC namespace).
static int CmdSysvWrite(int key, const char* text) {
  int id = shmget(key, 4096, IPC_CREAT | 0600);
  if (id < 0) {
    REPORT("sysv_write", -1);
    return 1;
  }
  char* p = shmat(id, NULL, 0);
  snprintf(p, 4096, "%s", text);
  printf("sysv_write=ok\n");
  return 0;
}
static int CmdSysvRead(int key) {
  int id = shmget(key, 0, 0);
  if (id < 0) {
    REPORT("sysv_read", -1);
    return 1;
  }
  char* p = shmat(id, NULL, SHM_RDONLY);
  printf("sysv_read=ok\nsysv_content=%s\n", p);
  return 0;
}

// ids: uid, gid, capabilities, no_new_privs, seccomp mode.
static int CmdIds(void) {
  printf("uid=%d\ngid=%d\n", (int)getuid(), (int)getgid());
  printf("no_new_privs=%d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  while (f && fgets(line, sizeof(line), f)) {
    if (!strncmp(line, "CapEff:", 7) || !strncmp(line, "Seccomp:", 8)) {
      fputs(line, stdout);
    }
  }
  if (f) fclose(f);
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  printf("hostname=%s\n", host);
  return 0;
}

// gc-cycle PATH: opens PATH (a FIFO the test reads) for writing, puts that
// descriptor and both ends of a socket pair into the pair's own queue
// (SCM_RIGHTS) and closes all three: a unix-socket garbage cycle that no
// process holds; the FIFO's reader sees no hang-up until it is collected.
static int CmdGcCycle(const char* path) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  int sv[2];
  if (fd < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    printf("gc-cycle=%s\n", strerror(errno));
    return 1;
  }
  const int fds[3] = {sv[0], sv[1], fd};
  union {
    char buf[CMSG_SPACE(sizeof fds)];
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof u);
  char x = 'x';
  struct iovec io = {&x, 1};
  struct msghdr m;
  memset(&m, 0, sizeof m);
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = u.buf;
  m.msg_controllen = sizeof u.buf;
  struct cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  memcpy(CMSG_DATA(c), fds, sizeof fds);
  const int sent = sendmsg(sv[0], &m, 0) == 1;
  close(sv[0]);
  close(sv[1]);
  close(fd);
  printf("gc-cycle=%s\n", sent ? "OK" : strerror(errno));
  return sent ? 0 : 1;
}

// exit N / signal N
int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  const char* cmd = argv[1];
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!strcmp(cmd, "connect") && argc == 4) return CmdConnect(argv[2], atoi(argv[3]));
  if (!strcmp(cmd, "connect-abstract") && argc == 3) return CmdConnectAbstract(argv[2]);
  if (!strcmp(cmd, "serve") && argc == 3) return CmdServe(atoi(argv[2]));
  if (!strcmp(cmd, "talk") && argc == 3) return CmdTalk(atoi(argv[2]));
  if (!strcmp(cmd, "ifaces")) return CmdIfaces();
  if (!strcmp(cmd, "read") && argc == 3) return CmdRead(argv[2]);
  if (!strcmp(cmd, "write") && argc == 3) return CmdWrite(argv[2]);
  if (!strcmp(cmd, "open-write") && argc == 3) return CmdOpenWrite(argv[2]);
  if (!strcmp(cmd, "symlink") && argc == 4) return CmdSymlink(argv[2], argv[3]);
  if (!strcmp(cmd, "env")) return CmdEnv();
  if (!strcmp(cmd, "procfs-dump")) return CmdProcfsDump();
  if (!strcmp(cmd, "forkbomb") && argc == 3) return CmdForkBomb(atoi(argv[2]));
  if (!strcmp(cmd, "daemon") && argc == 5) return CmdDaemon(argv[0], argv[2], argv[3], argv[4]);
  if (!strcmp(cmd, "linger") && argc == 4) return CmdLinger(argv[2], argv[3]);
  if (!strcmp(cmd, "attack-pid") && argc == 3) return CmdAttackPid(atoi(argv[2]));
  if (!strcmp(cmd, "syscalls")) return CmdSyscalls();
  if (!strcmp(cmd, "spin")) return CmdSpin();
  if (!strcmp(cmd, "fsize") && argc == 4) return CmdFsize(atol(argv[2]), argv[3]);
  if (!strcmp(cmd, "nofile") && argc == 3) return CmdNofile(atoi(argv[2]));
  if (!strcmp(cmd, "memhog") && argc == 3) return CmdMemhog(atol(argv[2]));
  if (!strcmp(cmd, "spew") && argc == 3) return CmdSpew(atol(argv[2]));
  if (!strcmp(cmd, "shm-write") && argc == 4) return CmdShmWrite(argv[2], argv[3]);
  if (!strcmp(cmd, "shm-read") && argc == 3) return CmdShmRead(argv[2]);
  if (!strcmp(cmd, "sysv-write") && argc == 4) return CmdSysvWrite(atoi(argv[2]), argv[3]);
  if (!strcmp(cmd, "sysv-read") && argc == 3) return CmdSysvRead(atoi(argv[2]));
  if (!strcmp(cmd, "ids")) return CmdIds();
  if (!strcmp(cmd, "gc-cycle") && argc == 3) return CmdGcCycle(argv[2]);
  if (!strcmp(cmd, "exit") && argc == 3) return atoi(argv[2]);
  if (!strcmp(cmd, "signal") && argc == 3) {
    raise(atoi(argv[2]));
    return 0;
  }
  return Usage();
}
