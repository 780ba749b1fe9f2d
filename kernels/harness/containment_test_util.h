// Helpers shared by the containment tests (containment_test.cc: the rank's
// hardening; candidate_processes_test.cc: the judge's view of the candidate's
// processes).
//
// Thread safety: call from the test's main thread (they fork).
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pkforge::kernels::testing {

// Runs fn in a forked child and returns its exit code.
template <typename Fn>
inline int InChild(Fn fn) {
  const pid_t pid = fork();
  if (pid == 0) _exit(fn());
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// A process that sleeps until killed (stands for a trusted process).
inline pid_t Sleeper(bool non_dumpable) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (non_dumpable) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    for (;;) pause();
  }
  return pid;
}

inline void Reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace pkforge::kernels::testing
