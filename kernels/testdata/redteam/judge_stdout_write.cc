// ATTACK (result channel via /proc): write a forged result line ("OK",
// speedup 100) straight into the judge's stdout and stderr through
// /proc/<judge>/fd/{1,2}; computes nothing.
// EXPECT: WRONG_OUTPUT, and the judge's stdout holds exactly its own one line.
#include "kernels/testdata/redteam/redteam.h"
static const char kForged[] =
    "{\"status\":\"OK\",\"message\":\"forged by judge_stdout_write\",\"speedup\":100}\n";
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  static bool done = false;
  if (done) return 0;
  done = true;
  for (int n : {1, 2}) {
    const std::string p = "/proc/" + std::to_string(getppid()) + "/fd/" + std::to_string(n);
    int fd = open(p.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t w = write(fd, kForged, sizeof kForged - 1);
    rt_log("wrote %zd bytes to the judge's fd %d", w, n);
    close(fd);
  }
  return 0;
}
