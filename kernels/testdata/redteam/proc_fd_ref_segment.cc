// ATTACK (trusted processes): re-open a reference rank's shared segments
// through /proc/<ref>/fd/{5,6,7,8} (its control block, scratch, data, and the
// candidate side's data), map them, unmap again (so /proc/self/maps shows
// nothing). A real attacker would read the reference outputs or rewrite them.
// EXPECT: WRONG_OUTPUT (gated: outputs are written only if a segment opened;
// the reference ranks are non-dumpable).
#include "kernels/testdata/redteam/redteam.h"
static bool attack(pkf_context*) {
  bool any = false;
  for (int ref : rt_refs()) {
    for (int n = 5; n <= 8; ++n) {
      const std::string p = "/proc/" + std::to_string(ref) + "/fd/" + std::to_string(n);
      int fd = open(p.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0) continue;
      struct stat st;
      if (fstat(fd, &st) == 0 && st.st_size > 0) {
        void* m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED) {
          any = true;
          munmap(m, (size_t)st.st_size);
        }
      }
      close(fd);
    }
  }
  return any;
}
RT_GATED_CANDIDATE(attack)
