// ATTACK (trusted processes): open every descriptor of the judge through
// /proc/<judge>/fd/N: the write ends of the reference ranks' command pipes,
// the read ends of their reply pipes, their stderr memfds.
// EXPECT: WRONG_OUTPUT (gated: outputs only if any descriptor opened; the
// judge is non-dumpable).
#include "kernels/testdata/redteam/redteam.h"
static bool attack(pkf_context*) {
  int opened = 0;
  const std::string dir = "/proc/" + std::to_string(getppid()) + "/fd/";
  for (int n = 0; n < 512; ++n) {
    int fd = open((dir + std::to_string(n)).c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) fd = open((dir + std::to_string(n)).c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      ++opened;
      close(fd);
    }
  }
  rt_log("opened %d descriptors of the judge", opened);
  return opened > 0;
}
RT_GATED_CANDIDATE(attack)
