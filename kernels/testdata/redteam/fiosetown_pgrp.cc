// ATTACK (trusted processes): FIOSETOWN (ioctl) of a socket to the negative
// process group of the ranks (every reference rank), FIOASYNC, then make it
// readable: SIGIO (default action: terminate) to the whole group. The
// candidate rank ignores SIGIO itself. Compute nothing.
// EXPECT: WRONG_OUTPUT.
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  static bool done = false;
  if (done) return 0;
  done = true;
  signal(SIGIO, SIG_IGN);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 0;
  int owner = -getpgrp();
  const int a = ioctl(sv[0], FIOSETOWN, &owner);
  int on = 1;
  const int b = ioctl(sv[0], FIOASYNC, &on);
  ssize_t w = write(sv[1], "x", 1);
  rt_log("FIOSETOWN %d FIOASYNC %d write %zd", a, b, w);
  return 0;
}
