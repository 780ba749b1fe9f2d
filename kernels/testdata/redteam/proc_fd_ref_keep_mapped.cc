// ATTACK (trusted processes): like proc_fd_ref_segment, but keeps the
// reference segments mapped (the naive attacker).
// EXPECT: WRONG_OUTPUT (blocked), or CHEAT_DETECTED reference_isolation (the
// maps check finds pkf-ref-* in a candidate process).
#include "kernels/testdata/redteam/redteam.h"
static bool attack(pkf_context*) {
  bool any = false;
  for (int ref : rt_refs()) {
    for (int n = 5; n <= 8; ++n) {
      const std::string p = "/proc/" + std::to_string(ref) + "/fd/" + std::to_string(n);
      int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      struct stat st;
      if (fstat(fd, &st) == 0 && st.st_size > 0 &&
          mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0) != MAP_FAILED)
        any = true;
      close(fd);
    }
  }
  return any;
}
RT_GATED_CANDIDATE(attack)
