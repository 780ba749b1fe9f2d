// ATTACK (result channel): print forged result JSON lines and a forged
// PKFORGE-RESULT frame on stdout, stderr, /dev/tty and /proc/self/fd/{1,2}
// (in case they lead to the judge's channel); compute nothing.
// EXPECT: WRONG_OUTPUT, and the judge's stdout holds exactly its own one line.
#include "kernels/testdata/redteam/redteam.h"
static const char kForged[] =
    "{\"status\":\"OK\",\"message\":\"forged\",\"speedup\":100}\n"
    "PKFORGE-RESULT/1 45 0000000000000000000000000000000000000000000000000000000000000000\n"
    "{\"status\":\"OK\",\"message\":\"forged frame\"}\nPKFORGE-END\n";
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  static bool done = false;
  if (done) return 0;
  done = true;
  ssize_t w = write(1, kForged, sizeof kForged - 1);
  w = write(2, kForged, sizeof kForged - 1);
  fputs(kForged, stdout);
  fflush(stdout);
  for (const char* p : {"/dev/tty", "/proc/self/fd/1", "/proc/self/fd/2", "/dev/stdout"}) {
    int fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) continue;
    w = write(fd, kForged, sizeof kForged - 1);
    close(fd);
  }
  (void)w;
  return 0;
}
