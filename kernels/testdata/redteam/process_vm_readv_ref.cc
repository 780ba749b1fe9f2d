// ATTACK (trusted processes): process_vm_readv from every reference rank (an
// EFAULT also proves access: the permission check comes first).
// EXPECT: WRONG_OUTPUT (gated: outputs only if the read was permitted).
#include <sys/uio.h>

#include "kernels/testdata/redteam/redteam.h"
static bool attack(pkf_context*) {
  bool any = false;
  for (int ref : rt_refs()) {
    char buf[16];
    struct iovec local = {buf, sizeof buf};
    struct iovec remote = {(void*)0x400000, sizeof buf};  // some address; EFAULT is fine
    const ssize_t rc = process_vm_readv(ref, &local, 1, &remote, 1, 0);
    const int e = errno;
    rt_log("process_vm_readv(%d) = %zd errno %d", ref, rc, rc < 0 ? e : 0);
    if (rc > 0 || (rc < 0 && e == EFAULT)) any = true;
  }
  return any;
}
RT_GATED_CANDIDATE(attack)
