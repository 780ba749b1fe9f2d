// What Sandbox::Spawn hands to the SandboxProcess that supervises the run
// (internal to sandbox/: sandbox.cc fills it, process.cc waits on it).
//
// Thread safety: a State belongs to its SandboxProcess; the fields that
// Kill() touches from other threads (pidfd, sandbox_init, cgroup kill) are
// used under SandboxProcess::mu_, as process.cc says where it does.
#pragma once

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/strings/ascii.h"
#include "common/clock.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "sandbox/cgroup.h"
#include "sandbox/sandbox.h"

namespace pkforge::sandbox {

struct SandboxProcess::State {
  SandboxMode mode = SandboxMode::kIsolated;
  int64_t timeout_ms = 0;
  int64_t max_output = 0;
  int64_t kill_grace_ms = 10'000;
  Stopwatch stopwatch;
  UniqueFd stdout_r, stderr_r, status_r, wake;
  UniqueFd pidfd;         // our child (bwrap, or the command when unsafe)
  UniqueFd sandbox_init;  // pidfd of the sandbox's PID 1, once known
  std::unique_ptr<RunCgroup> cgroup;
  std::string enforcement;
  bool reaped = false;
  bool waited = false;
  int wait_status = 0;
  struct rusage rusage {};
};

namespace internal {

inline int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }
inline int PidfdSignal(int pidfd, int sig) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}


// `text` without surrounding whitespace, cut at `max` bytes (with "...").
inline std::string Trimmed(std::string_view text, size_t max) {
  std::string out(absl::StripAsciiWhitespace(AsAbsl(text)));
  if (out.size() > max) out = out.substr(0, max) + "...";
  return out;
}

}  // namespace internal
}  // namespace pkforge::sandbox
