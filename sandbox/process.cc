// SandboxProcess: supervision of one sandboxed run -- the poll loop over
// its output, bwrap's status stream, the child's pidfd and the sandbox's
// init; deadlines and kills of the whole tree; the outcome.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/unix_gc.h"
#include "fmt/format.h"
#include "sandbox/process_state.h"
#include "sandbox/sandbox.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace pkforge::sandbox {
namespace {

using internal::PidfdOpen;
using internal::PidfdSignal;
using internal::Trimmed;

// Parses bwrap's --json-status-fd stream: one JSON object per line. We only
// need three integer fields, so a strict scan is enough (and keeps this code
// free of a JSON dependency in the one path that must never throw).
std::optional<int64_t> JsonInt(std::string_view doc, std::string_view key) {
  std::string quoted = fmt::format("\"{}\"", key);
  size_t at = doc.find(quoted);
  if (at == std::string_view::npos) return std::nullopt;
  at = doc.find(':', at + quoted.size());
  if (at == std::string_view::npos) return std::nullopt;
  ++at;
  while (at < doc.size() && doc[at] == ' ') ++at;
  size_t end = at;
  if (end < doc.size() && doc[end] == '-') ++end;
  while (end < doc.size() && doc[end] >= '0' && doc[end] <= '9') ++end;
  int64_t v;
  if (!absl::SimpleAtoi(AsAbsl(doc.substr(at, end - at)), &v)) return std::nullopt;
  return v;
}

// Reads /proc/<pid>/ns/pid; "" when unreadable.
std::string PidNamespaceOf(pid_t pid) {
  char buf[64];
  ssize_t n = readlink(fmt::format("/proc/{}/ns/pid", pid).c_str(), buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

pid_t ParentOf(pid_t pid) {
  int fd = open(fmt::format("/proc/{}/stat", pid).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return -1;
  std::string_view s(buf, static_cast<size_t>(n));
  size_t paren = s.rfind(')');  // comm may contain spaces and parentheses
  if (paren == std::string_view::npos || paren + 4 >= s.size()) return -1;
  std::vector<absl::string_view> f =
      absl::StrSplit(AsAbsl(s.substr(paren + 2)), ' ', absl::SkipEmpty());
  int ppid;
  if (f.size() < 2 || !absl::SimpleAtoi(f[1], &ppid)) return -1;
  return ppid;
}

}  // namespace

int SandboxResult::ShellExitCode() const {
  if (timed_out) return 124;
  if (term_signal > 0) return 128 + term_signal;
  if (killed) return 128 + SIGKILL;
  return exit_code < 0 ? 125 : exit_code;
}

// ---------------------------------------------------------------------------

SandboxProcess::SandboxProcess(std::unique_ptr<State> state) : state_(std::move(state)) {}

SandboxProcess::~SandboxProcess() {
  if (state_ == nullptr) return;
  if (!state_->waited) {
    Kill();
    std::lock_guard<std::mutex> lock(mu_);
    if (!state_->reaped && pid_ > 0) {
      // SIGKILLed above; this returns promptly.
      while (waitpid(pid_, &state_->wait_status, 0) < 0 && errno == EINTR) {
      }
      state_->reaped = true;
    }
  }
  if (state_->cgroup != nullptr) {
    absl::Status s = state_->cgroup->Destroy(state_->kill_grace_ms);
    if (!s.ok()) spdlog::error("sandbox: {}", s.ToString());
  }
}

void SandboxProcess::KillTreeLocked() {
  // Signalling through pidfds is immune to pid reuse. Our own child cannot
  // be reused before we reap it, which is also what makes its process group
  // id safe to use until then.
  if (!state_->reaped) {
    if (state_->pidfd.valid()) PidfdSignal(state_->pidfd.get(), SIGKILL);
    kill(-pid_, SIGKILL);
  }
  // The sandbox's init: when it dies the kernel kills the whole namespace.
  if (state_->sandbox_init.valid()) PidfdSignal(state_->sandbox_init.get(), SIGKILL);
  if (state_->cgroup != nullptr) state_->cgroup->KillAll();
}

void SandboxProcess::Kill() {
  kill_requested_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    KillTreeLocked();
  }
  if (state_->wake.valid()) {
    uint64_t one = 1;
    ssize_t ignored = write(state_->wake.get(), &one, sizeof(one));
    (void)ignored;
  }
}

// Long (~200 lines) on purpose: one poll loop whose lambdas (kill_now,
// capture, learn_init) share the loop's local state (EOF flags, deadlines,
// what bwrap reported); split into functions they would pass a dozen
// variables by pointer and the order of the checks at the top of the loop,
// which matters (see the comments there), would be spread across them. The
// outcome is worked out afterwards by Conclude.
absl::StatusOr<SandboxResult> SandboxProcess::Wait(const OutputCallback& on_output) {
  State& st = *state_;
  if (st.waited) return absl::FailedPreconditionError("SandboxProcess::Wait called twice");
  st.waited = true;

  SandboxResult result;
  result.mode = st.mode;
  result.enforcement = st.enforcement;

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now() - std::chrono::microseconds(st.stopwatch.ElapsedMicros());
  std::optional<Clock::time_point> deadline;
  if (st.timeout_ms > 0) deadline = start + std::chrono::milliseconds(st.timeout_ms);
  std::optional<Clock::time_point> kill_deadline;   // grace after we killed
  std::optional<Clock::time_point> drain_deadline;  // unsafe mode: stray writers

  bool out_eof = false, err_eof = false, status_eof = !st.status_r.valid();
  bool init_gone = st.mode != SandboxMode::kIsolated;
  bool we_killed = false;
  std::string status_text;
  std::optional<int64_t> child_pid, exit_code_doc;
  std::string pid_ns;  // "pid:[inode]"

  // Why we killed: the deadline, a Kill() call, or only to finish off what
  // is left after the command already exited (which is neither).
  enum class KillReason { kDeadline, kRequested, kCleanup };
  auto kill_now = [&](KillReason reason) {
    if (we_killed) return;
    we_killed = true;
    result.timed_out = reason == KillReason::kDeadline;
    result.killed = reason == KillReason::kRequested;
    {
      std::lock_guard<std::mutex> lock(mu_);
      KillTreeLocked();
    }
    kill_deadline = Clock::now() + std::chrono::milliseconds(st.kill_grace_ms);
  };
  // Whether the command ended on its own (so a kill now is only cleanup).
  // Not "bwrap was reaped": Kill() signals the tree directly, so bwrap may
  // already be gone because of the very kill we are about to account for.
  auto command_finished = [&]() {
    if (st.mode == SandboxMode::kIsolated) return exit_code_doc.has_value();
    return st.reaped && !(WIFSIGNALED(st.wait_status) && WTERMSIG(st.wait_status) == SIGKILL);
  };

  auto capture = [&](int fd, OutputStream which, bool* eof) {
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
      *eof = true;
      return;
    }
    std::string& data = which == OutputStream::kStdout ? result.stdout_data : result.stderr_data;
    bool& truncated =
        which == OutputStream::kStdout ? result.stdout_truncated : result.stderr_truncated;
    int64_t& total =
        which == OutputStream::kStdout ? result.stdout_total_bytes : result.stderr_total_bytes;
    total += n;
    size_t room = st.max_output > static_cast<int64_t>(data.size())
                      ? static_cast<size_t>(st.max_output) - data.size()
                      : 0;
    size_t keep = std::min(room, static_cast<size_t>(n));
    if (keep < static_cast<size_t>(n)) truncated = true;
    if (keep > 0) {
      data.append(buf, keep);
      if (on_output) on_output(which, std::string_view(buf, keep));
    }
  };

  auto learn_init = [&](int64_t pid) {
    // Pin the sandbox's init with a pidfd and check it is still the process
    // bwrap reported (same pid namespace) before we ever signal it.
    UniqueFd fd(PidfdOpen(static_cast<pid_t>(pid)));
    if (!fd.valid()) {
      init_gone = true;
      return;
    }
    std::string ns = PidNamespaceOf(static_cast<pid_t>(pid));
    bool same = !pid_ns.empty() ? ns == pid_ns : ParentOf(static_cast<pid_t>(pid)) == pid_;
    if (!same) {
      init_gone = true;
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    st.sandbox_init = std::move(fd);
    if (we_killed) PidfdSignal(st.sandbox_init.get(), SIGKILL);
  };

  absl::Status stuck;
  for (;;) {
    const auto now = Clock::now();
    // First, before deciding we are done: Kill() signals the tree itself, so
    // the tree may already be gone by the time we see the request.
    if (!we_killed && kill_requested_) {
      kill_now(command_finished() ? KillReason::kCleanup : KillReason::kRequested);
    }
    // bwrap failed before it cloned the sandbox's init: nothing more to await.
    if (st.reaped && status_eof && !child_pid) init_gone = true;
    // status_eof too: bwrap writes its exit-code document just before it
    // exits, and we must not stop before reading it.
    bool done = st.reaped && out_eof && err_eof && init_gone && status_eof;
    if (st.mode == SandboxMode::kUnsafeNoSandbox && st.reaped) {
      // The command's own process group and cgroup die with it, so that
      // unsafe mode keeps "the whole tree, always" as far as it can.
      if (!drain_deadline) {
        kill(-pid_, SIGKILL);
        if (st.cgroup != nullptr) st.cgroup->KillAll();
        drain_deadline = now + std::chrono::milliseconds(200);
      }
      if (now >= *drain_deadline) done = true;
    }
    if (done) break;
    if (!we_killed && deadline && now >= *deadline) {
      kill_now(command_finished() ? KillReason::kCleanup : KillReason::kDeadline);
    }
    if (kill_deadline && now >= *kill_deadline) {
      stuck = absl::InternalError(fmt::format(
          "sandbox tree of pid {} did not exit within {} ms of SIGKILL", pid_, st.kill_grace_ms));
      break;
    }

    std::vector<pollfd> pfds;
    enum Tag { kOut, kErr, kStatus, kChild, kInit, kWake };
    std::vector<Tag> tags;
    auto watch = [&](int fd, Tag tag) {
      pfds.push_back(pollfd{fd, POLLIN, 0});
      tags.push_back(tag);
    };
    if (!out_eof) watch(st.stdout_r.get(), kOut);
    if (!err_eof) watch(st.stderr_r.get(), kErr);
    if (!status_eof) watch(st.status_r.get(), kStatus);
    if (!st.reaped) watch(st.pidfd.get(), kChild);
    if (!init_gone && st.sandbox_init.valid()) watch(st.sandbox_init.get(), kInit);
    watch(st.wake.get(), kWake);

    auto until = Clock::time_point::max();
    if (deadline && !we_killed) until = std::min(until, *deadline);
    if (kill_deadline) until = std::min(until, *kill_deadline);
    if (drain_deadline) until = std::min(until, *drain_deadline);
    int timeout = -1;
    if (until != Clock::time_point::max()) {
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
      timeout = static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000));
    }
    int rc = poll(pfds.data(), pfds.size(), timeout);
    if (rc < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("poll on sandbox descriptors", errno);
    }
    for (size_t i = 0; i < pfds.size(); ++i) {
      if (pfds[i].revents == 0) continue;
      switch (tags[i]) {
        case kOut:
          capture(pfds[i].fd, OutputStream::kStdout, &out_eof);
          break;
        case kErr:
          capture(pfds[i].fd, OutputStream::kStderr, &err_eof);
          break;
        case kStatus: {
          char buf[4096];
          ssize_t n = read(pfds[i].fd, buf, sizeof(buf));
          if (n < 0 && (errno == EINTR || errno == EAGAIN)) break;
          if (n <= 0) {
            status_eof = true;
            break;
          }
          if (status_text.size() < 65536) status_text.append(buf, static_cast<size_t>(n));
          // Documents are newline-terminated; act on each complete one.
          size_t nl;
          while ((nl = status_text.find('\n')) != std::string::npos) {
            std::string doc = status_text.substr(0, nl);
            status_text.erase(0, nl + 1);
            if (auto pid = JsonInt(doc, "child-pid"); pid && !child_pid) {
              child_pid = pid;
              if (auto ns = JsonInt(doc, "pid-namespace")) pid_ns = fmt::format("pid:[{}]", *ns);
              learn_init(*pid);
            }
            if (auto code = JsonInt(doc, "exit-code")) exit_code_doc = code;
          }
          break;
        }
        case kChild: {
          std::lock_guard<std::mutex> lock(mu_);
          pid_t r = wait4(pid_, &st.wait_status, WNOHANG, &st.rusage);
          if (r == pid_) st.reaped = true;
          break;
        }
        case kInit: {
          std::lock_guard<std::mutex> lock(mu_);
          // When bwrap's monitor exits first, the sandbox's init is
          // re-parented; if that made it our child (we are PID 1 of a
          // container, or a subreaper), collect it so no zombie is left.
          // A pidfd wait cannot hit a reused pid.
          siginfo_t info;
          (void)waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(st.sandbox_init.get()),
                       &info, WEXITED | WNOHANG);
          st.sandbox_init.Reset();
          init_gone = true;
          break;
        }
        case kWake: {
          uint64_t v;
          ssize_t ignored = read(pfds[i].fd, &v, sizeof(v));
          (void)ignored;
          break;  // the kill_requested_ check at the top of the loop acts on it
        }
      }
    }
  }

  return Conclude(std::move(result), exit_code_doc, stuck);
}

// After the poll loop: the tree is gone (or stuck). Accounting from the
// cgroup (or rusage when unsafe), then what the run's end means: an exit or
// a signal of the command, our kill, or a bwrap set-up failure.
absl::StatusOr<SandboxResult> SandboxProcess::Conclude(SandboxResult result,
                                                       std::optional<int64_t> exit_code_doc,
                                                       const absl::Status& stuck) {
  using Clock = std::chrono::steady_clock;
  State& st = *state_;
  // The tree is gone (or stuck). Make sure of it through the cgroup as well,
  // then collect accounting before removing it.
  if (st.cgroup != nullptr) {
    const auto until = Clock::now() + std::chrono::milliseconds(st.kill_grace_ms);
    while (!st.cgroup->IsEmpty() && Clock::now() < until) {
      st.cgroup->KillAll();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    CgroupStats stats = st.cgroup->ReadStats();
    if (stats.cpu_usec >= 0) result.cpu_ms = stats.cpu_usec / 1000;
    if (stats.memory_peak_bytes >= 0) result.peak_rss_kb = stats.memory_peak_bytes / 1024;
    result.oom_killed = stats.oom_kills > 0;
    absl::Status destroyed = st.cgroup->Destroy(st.kill_grace_ms);
    if (!destroyed.ok()) spdlog::error("sandbox: {}", destroyed.ToString());
  }
  // The sandbox's processes are gone; what they left in flight in a
  // unix-socket cycle is not (common/unix_gc.h): collected now.
  if (absl::Status gc = CollectUnixSocketGarbage(); !gc.ok())
    spdlog::warn("sandbox: {}", gc.ToString());
  result.wall_ms = st.stopwatch.ElapsedMicros() / 1000;
  if (!stuck.ok()) {
    spdlog::error("sandbox: {}", stuck.ToString());
    return stuck;
  }

  if (st.mode == SandboxMode::kUnsafeNoSandbox) {
    if (result.cpu_ms < 0) {
      result.cpu_ms = (st.rusage.ru_utime.tv_sec + st.rusage.ru_stime.tv_sec) * 1000 +
                      (st.rusage.ru_utime.tv_usec + st.rusage.ru_stime.tv_usec) / 1000;
    }
    if (result.peak_rss_kb < 0) result.peak_rss_kb = st.rusage.ru_maxrss;
    if (WIFEXITED(st.wait_status)) {
      result.exit_code = WEXITSTATUS(st.wait_status);
    } else if (WIFSIGNALED(st.wait_status)) {
      result.term_signal = WTERMSIG(st.wait_status);
    }
    if (result.timed_out || result.killed) result.term_signal = SIGKILL, result.exit_code = -1;
    return result;
  }

  if (exit_code_doc) {
    // The command ran and exited (possibly just as we killed it).
    int code = static_cast<int>(*exit_code_doc);
    if (code > 128 && code <= 128 + 64) {
      result.term_signal = code - 128;
    } else {
      result.exit_code = code;
    }
    // Killed by us only if it died of our SIGKILL; an exit that beat the
    // signal is a normal exit.
    result.timed_out = result.timed_out && result.term_signal == SIGKILL;
    result.killed = result.killed && result.term_signal == SIGKILL;
    return result;
  }
  if (result.timed_out || result.killed || result.oom_killed) {
    result.term_signal = SIGKILL;
    return result;
  }
  // bwrap ended without running the command: a set-up failure. Its message
  // (always "bwrap: ...") is on the stderr we captured.
  std::string message = Trimmed(result.stderr_data, 2000);
  int bwrap_status =
      WIFEXITED(st.wait_status) ? WEXITSTATUS(st.wait_status) : 128 + WTERMSIG(st.wait_status);
  if (absl::StrContains(message, "bwrap: execvp")) {
    if (absl::StrContains(message, "Permission denied")) {
      return absl::PermissionDeniedError(fmt::format("command not executable: {}", message));
    }
    return absl::NotFoundError(fmt::format("command not found in the sandbox: {}", message));
  }
  return absl::FailedPreconditionError(
      fmt::format("sandbox set-up failed (bwrap exited with {}): {}", bwrap_status,
                  message.empty() ? "no message" : message));
}

}  // namespace pkforge::sandbox
