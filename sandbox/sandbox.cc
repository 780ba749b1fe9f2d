#include "sandbox/sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "sandbox/bwrap_args.h"
#include "sandbox/cgroup.h"
#include "sandbox/seccomp_filter.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace pkforge::sandbox {
namespace {

// bwrap itself runs two tasks inside the limits (the monitor and the
// sandbox's init), so the process limit is raised by this much.
constexpr int64_t kBwrapTasks = 3;
constexpr int64_t kMinOpenFiles = 32;  // bwrap needs a handful during set-up

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }
int PidfdSignal(int pidfd, int sig) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

absl::StatusOr<UniqueFd> MemfdWith(const char* name, std::string_view data) {
  UniqueFd fd(memfd_create(name, MFD_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("memfd_create {}", name), errno);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd.get(), data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoError(fmt::format("writing memfd {}", name), errno);
    off += static_cast<size_t>(n);
  }
  if (lseek(fd.get(), 0, SEEK_SET) != 0) return ErrnoError("lseek memfd", errno);
  return fd;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

bool ContainsNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// realpath() of an existing absolute path, refusing the ones no policy may
// name: "/" (the whole host) and the kernel filesystems (/proc, /sys, /dev:
// GPU access goes through policy.gpu).
absl::StatusOr<std::string> CanonicalPolicyPath(std::string_view what, const std::string& path) {
  if (path.empty() || path.front() != '/' || ContainsNul(path)) {
    return absl::InvalidArgumentError(fmt::format("{} '{}': must be an absolute path", what, path));
  }
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) {
    return absl::InvalidArgumentError(fmt::format("{} '{}': {}", what, path, std::strerror(errno)));
  }
  std::string canonical = buf;
  for (const char* bad : {"/proc", "/sys", "/dev"}) {
    if (canonical == bad || absl::StartsWith(canonical, std::string(bad) + "/")) {
      return absl::InvalidArgumentError(
          fmt::format("{} '{}': kernel filesystems cannot be bound", what, path));
    }
  }
  if (canonical == "/") {
    return absl::InvalidArgumentError(fmt::format("{} '{}': the host root", what, path));
  }
  return canonical;
}

// Tasks (threads included: RLIMIT_NPROC counts tasks) whose real uid is `uid`.
int64_t CountTasksOfUid(uid_t uid) {
  int64_t total = 0;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return 0;
  while (struct dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    int fd = open(fmt::format("/proc/{}/status", e->d_name).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) continue;
    std::string_view text(buf, static_cast<size_t>(n));
    int64_t real_uid = -1, threads = 1;
    for (absl::string_view line : absl::StrSplit(AsAbsl(text), '\n')) {
      if (absl::ConsumePrefix(&line, "Uid:")) {
        std::vector<absl::string_view> ids =
            absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
        if (!ids.empty()) (void)absl::SimpleAtoi(ids[0], &real_uid);
      } else if (absl::ConsumePrefix(&line, "Threads:")) {
        (void)absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &threads);
      }
    }
    if (real_uid == static_cast<int64_t>(uid)) total += threads;
  }
  closedir(dir);
  return total;
}

// Finds `name` on the PATH given by `env` (NAME=VALUE list), or /usr/bin:/bin.
std::string ResolveOnPath(const std::string& name, const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const std::string& kv : env) {
    if (absl::StartsWith(kv, "PATH=")) path = kv.substr(5);
  }
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    std::string candidate = fmt::format("{}/{}", AsStd(dir), name);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return name;  // execve will fail with ENOENT, reported as NOT_FOUND
}

// ---------------------------------------------------------------------------
// The forked child. Everything it uses is prepared before fork(): the parent
// may be multi-threaded, so between fork and exec only async-signal-safe
// system calls are allowed (no malloc, no locks, no logging).

enum ChildStep : int32_t {
  kStepCgroup = 1,
  kStepSetgroups,
  kStepSetgid,
  kStepSetuid,
  kStepDup,
  kStepChdir,
  kStepRlimit,
  kStepExec,
  kStepParentGone,
};

const char* ChildStepName(int32_t step) {
  switch (step) {
    case kStepCgroup:
      return "joining the per-run cgroup";
    case kStepSetgroups:
      return "clearing supplementary groups";
    case kStepSetgid:
      return "switching to run_as_gid";
    case kStepSetuid:
      return "switching to run_as_uid";
    case kStepDup:
      return "arranging descriptors";
    case kStepChdir:
      return "changing directory";
    case kStepRlimit:
      return "setting resource limits";
    case kStepExec:
      return "executing";
    case kStepParentGone:
      return "checking the parent";
    default:
      return "starting";
  }
}

struct ChildPlan {
  const char* exec_path = nullptr;
  std::vector<char*> argv;  // null-terminated, pointing into strings kept alive
  std::vector<char*> envp;
  struct FdMove {
    int src;
    int dst;
    bool cloexec;
  };
  std::vector<FdMove> fds;
  std::vector<int> cgroup_procs_fds;
  struct Limit {
    int resource;
    struct rlimit value;
  };
  std::vector<Limit> limits;
  int64_t uid = -1, gid = -1;
  const char* chdir_path = nullptr;
  pid_t parent_pid = 0;
  int error_fd = -1;  // write end of the exec-error pipe (before the moves)
};

[[noreturn]] void ChildFail(int fd, int32_t step, int err) {
  int32_t msg[2] = {step, err};
  ssize_t ignored = write(fd, msg, sizeof(msg));
  (void)ignored;
  _exit(127);
}

[[noreturn]] void RunChild(const ChildPlan& p) {
  // Signals: the parent may block or ignore some (gRPC ignores SIGPIPE);
  // those settings would otherwise be inherited across exec.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);

  // Own process group, so the parent can signal everything outside the pid
  // namespace (bwrap's monitor) at once.
  setpgid(0, 0);
  // Die with the parent; close the race where it died before the prctl.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != p.parent_pid) ChildFail(p.error_fd, kStepParentGone, ESRCH);

  // Join the per-run cgroups before anything else runs: "0" means "me".
  for (int fd : p.cgroup_procs_fds) {
    if (write(fd, "0", 1) != 1) ChildFail(p.error_fd, kStepCgroup, errno);
  }

  if (p.gid >= 0) {
    if (setgroups(0, nullptr) != 0) ChildFail(p.error_fd, kStepSetgroups, errno);
    if (setresgid(p.gid, p.gid, p.gid) != 0) ChildFail(p.error_fd, kStepSetgid, errno);
  }
  if (p.uid >= 0 && setresuid(p.uid, p.uid, p.uid) != 0) {
    ChildFail(p.error_fd, kStepSetuid, errno);
  }

  // Move descriptors to their fixed numbers: first above every target (so
  // no move clobbers a source still needed), then down.
  int err_fd = p.error_fd;
  int tmp[16];
  const size_t n = p.fds.size();
  for (size_t i = 0; i < n && i < 16; ++i) {
    tmp[i] = fcntl(p.fds[i].src, F_DUPFD_CLOEXEC, kFirstFreeFd);
    if (tmp[i] < 0) ChildFail(err_fd, kStepDup, errno);
  }
  int err_tmp = fcntl(err_fd, F_DUPFD_CLOEXEC, kFirstFreeFd);
  if (err_tmp < 0) ChildFail(err_fd, kStepDup, errno);
  if (dup3(err_tmp, kFdExecError, O_CLOEXEC) < 0) ChildFail(err_fd, kStepDup, errno);
  err_fd = kFdExecError;
  for (size_t i = 0; i < n && i < 16; ++i) {
    if (dup3(tmp[i], p.fds[i].dst, p.fds[i].cloexec ? O_CLOEXEC : 0) < 0) {
      ChildFail(err_fd, kStepDup, errno);
    }
  }
  // Nothing else of the parent's (sockets, database handles, other
  // sandboxes' pipes) may leak into the sandbox.
  if (syscall(SYS_close_range, kFirstFreeFd, ~0U, 0) != 0) {
    for (int fd = kFirstFreeFd; fd < 65536; ++fd) close(fd);
  }

  if (p.chdir_path != nullptr && chdir(p.chdir_path) != 0) ChildFail(err_fd, kStepChdir, errno);
  for (const ChildPlan::Limit& l : p.limits) {
    if (setrlimit(l.resource, &l.value) != 0) ChildFail(err_fd, kStepRlimit, errno);
  }
  execve(p.exec_path, p.argv.data(), p.envp.data());
  ChildFail(err_fd, kStepExec, errno);
}

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

std::string Trimmed(std::string_view text, size_t max) {
  std::string out(absl::StripAsciiWhitespace(AsAbsl(text)));
  if (out.size() > max) out = out.substr(0, max) + "...";
  return out;
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

// Hands `root` and everything below it to uid:gid, never following links.
void ChownTree(const std::string& root, uid_t uid, gid_t gid) {
  (void)lchown(root.c_str(), uid, gid);
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    (void)lchown(it->path().c_str(), uid, gid);
  }
}

}  // namespace

std::string_view SandboxModeName(SandboxMode mode) {
  return mode == SandboxMode::kIsolated ? "isolated" : "unsafe-no-sandbox";
}

int SandboxResult::ShellExitCode() const {
  if (timed_out) return 124;
  if (term_signal > 0) return 128 + term_signal;
  if (killed) return 128 + SIGKILL;
  return exit_code < 0 ? 125 : exit_code;
}

// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Sandbox>> Sandbox::Create(SandboxConfig config) {
  if (config.inside_uid < 0 || config.inside_gid < 0 || config.inside_uid == 0) {
    return absl::InvalidArgumentError("inside_uid/inside_gid must be non-negative and uid != 0");
  }
  if ((config.run_as_uid >= 0) != (config.run_as_gid >= 0)) {
    return absl::InvalidArgumentError("run_as_uid and run_as_gid go together");
  }
  if (config.run_as_uid == 0) return absl::InvalidArgumentError("run_as_uid 0 is root");
  if (config.cgroup_base.empty() || config.cgroup_base.front() == '/' ||
      absl::StrContains(config.cgroup_base, "..")) {
    return absl::InvalidArgumentError(
        fmt::format("cgroup_base '{}': must be a relative path", config.cgroup_base));
  }
  if (config.hostname.empty() || ContainsNul(config.hostname)) {
    return absl::InvalidArgumentError("hostname must be non-empty");
  }
  if (config.kill_grace_ms <= 0) config.kill_grace_ms = 10'000;
  std::unique_ptr<Sandbox> sandbox(new Sandbox(std::move(config)));
  ASSIGN_OR_RETURN(sandbox->seccomp_default_, BuildSeccompFilter({.allow_perf_events = false}));
  ASSIGN_OR_RETURN(sandbox->seccomp_perf_, BuildSeccompFilter({.allow_perf_events = true}));
  return sandbox;
}

absl::StatusOr<std::string> Sandbox::BwrapPath() const {
  if (!config_.bwrap_path.empty()) {
    if (IsExecutableFile(config_.bwrap_path)) return config_.bwrap_path;
    return absl::FailedPreconditionError(fmt::format(
        "bubblewrap: configured path {} is not an executable file", config_.bwrap_path));
  }
  std::vector<std::string> tried;
  if (const char* path = getenv("PATH")) {
    for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
      if (dir.empty() || dir.front() != '/') continue;  // never relative to cwd
      std::string candidate = fmt::format("{}/bwrap", AsStd(dir));
      if (IsExecutableFile(candidate)) return candidate;
      tried.push_back(candidate);
    }
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    std::string self(exe, static_cast<size_t>(n));
    std::string candidate = self.substr(0, self.rfind('/')) + "/bwrap";
    if (IsExecutableFile(candidate)) return candidate;
    tried.push_back(candidate);
  }
  return absl::FailedPreconditionError(fmt::format(
      "bubblewrap (bwrap) not found; install the 'bubblewrap' package or ship bwrap next to "
      "this executable (tried {})",
      fmt::join(tried, ", ")));
}

absl::StatusOr<SandboxResult> Sandbox::Run(const std::vector<std::string>& argv,
                                           const SandboxPolicy& policy,
                                           const OutputCallback& on_output) const {
  ASSIGN_OR_RETURN(std::unique_ptr<SandboxProcess> process, Spawn(argv, policy));
  return process->Wait(on_output);
}

absl::Status Sandbox::SelfTest(bool gpu) const {
  SandboxPolicy policy;
  policy.gpu = gpu;
  policy.timeout_ms = 30'000;
  policy.env = {"PATH=/usr/bin:/bin"};
  absl::StatusOr<SandboxResult> r = Run({"true"}, policy);
  if (!r.ok()) return Annotate(r.status(), "sandbox self-test");
  if (!r->ok()) {
    return absl::FailedPreconditionError(
        fmt::format("sandbox self-test: `true` ended with status {}: {}", r->ShellExitCode(),
                    Trimmed(r->stderr_data, 2000)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SandboxProcess>> Sandbox::Spawn(const std::vector<std::string>& argv,
                                                               const SandboxPolicy& policy) const {
  // ---- Validate.
  if (argv.empty() || argv[0].empty()) return absl::InvalidArgumentError("empty command");
  for (const std::string& arg : argv) {
    if (ContainsNul(arg)) return absl::InvalidArgumentError("command argument contains NUL");
  }
  for (const std::string& kv : policy.env) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || ContainsNul(kv)) {
      return absl::InvalidArgumentError(fmt::format("env entry '{}': expected NAME=VALUE", kv));
    }
  }
  if (policy.timeout_ms < 0 || policy.cpu_seconds < 0 || policy.max_file_mb < 0 ||
      policy.max_open_files < 0 || policy.max_procs < 0 || policy.max_memory_mb < 0 ||
      policy.max_address_space_mb < 0 || policy.tmpfs_mb < 0 || policy.max_output_bytes < 0) {
    return absl::InvalidArgumentError("negative limit in sandbox policy");
  }
  if (policy.max_open_files > 0 && policy.max_open_files < kMinOpenFiles) {
    return absl::InvalidArgumentError(
        fmt::format("max_open_files must be 0 or at least {}", kMinOpenFiles));
  }
  std::string scratch;
  if (!policy.scratch_dir.empty()) {
    ASSIGN_OR_RETURN(scratch, CanonicalPolicyPath("scratch_dir", policy.scratch_dir));
    struct stat sst;
    if (stat(scratch.c_str(), &sst) != 0 || !S_ISDIR(sst.st_mode)) {
      return absl::InvalidArgumentError(
          fmt::format("scratch_dir '{}' is not a directory", policy.scratch_dir));
    }
  }
  std::vector<std::string> ro, rw, system_ro;
  for (const std::string& p : policy.ro_paths) {
    ASSIGN_OR_RETURN(std::string c, CanonicalPolicyPath("ro path", p));
    ro.push_back(std::move(c));
  }
  for (const std::string& p : policy.rw_paths) {
    ASSIGN_OR_RETURN(std::string c, CanonicalPolicyPath("rw path", p));
    rw.push_back(std::move(c));
  }
  for (const std::string& p : config_.system_ro_paths) {
    struct stat sst;
    if (stat(p.c_str(), &sst) != 0) continue;  // optional by nature (e.g. /opt/nvidia)
    ASSIGN_OR_RETURN(std::string c, CanonicalPolicyPath("system ro path", p));
    system_ro.push_back(std::move(c));
  }
  std::string cwd = policy.cwd.empty() ? (scratch.empty() ? "/tmp" : scratch) : policy.cwd;
  if (cwd.front() != '/' || ContainsNul(cwd)) {
    return absl::InvalidArgumentError(fmt::format("cwd '{}': must be absolute", cwd));
  }

  const bool unsafe = policy.unsafe_no_sandbox;
  const bool caller_is_root = geteuid() == 0;
  const bool drop_uid = caller_is_root && config_.run_as_uid >= 0;
  // The host uid the sandboxed processes will have.
  const uid_t host_uid = drop_uid ? static_cast<uid_t>(config_.run_as_uid) : getuid();

  std::string bwrap;
  if (!unsafe) {
    ASSIGN_OR_RETURN(bwrap, BwrapPath());
  } else {
    spdlog::warn(
        "sandbox: running `{}` WITHOUT ISOLATION (unsafe_no_sandbox): no namespaces, no seccomp, "
        "full view of this host's files and network; only rlimits, cgroups, the deadline and "
        "the environment scrub apply",
        argv[0]);
  }

  // ---- Limits and how each is enforced. A requested limit that nothing
  // here can enforce is an error, never dropped.
  std::vector<std::string> how;
  std::vector<ChildPlan::Limit> limits;
  auto rlim = [&limits](int resource, rlim_t soft, rlim_t hard) {
    limits.push_back({resource, {soft, hard}});
  };
  rlim(RLIMIT_CORE, 0, 0);  // no core files in scratch (memory contents, disk)
  if (policy.cpu_seconds > 0) {
    // SIGXCPU at the soft limit, SIGKILL one second later.
    rlim(RLIMIT_CPU, static_cast<rlim_t>(policy.cpu_seconds),
         static_cast<rlim_t>(policy.cpu_seconds + 1));
    how.push_back("cpu_time=rlimit(per-process)");
  }
  if (policy.max_file_mb > 0) {
    rlim_t bytes = static_cast<rlim_t>(policy.max_file_mb) * 1024 * 1024;
    rlim(RLIMIT_FSIZE, bytes, bytes);
    how.push_back("file_size=rlimit");
  }
  if (policy.max_open_files > 0) {
    rlim(RLIMIT_NOFILE, static_cast<rlim_t>(policy.max_open_files),
         static_cast<rlim_t>(policy.max_open_files));
    how.push_back("open_files=rlimit");
  }
  if (policy.max_address_space_mb > 0) {
    rlim_t bytes = static_cast<rlim_t>(policy.max_address_space_mb) * 1024 * 1024;
    rlim(RLIMIT_AS, bytes, bytes);
    how.push_back("address_space=rlimit");
  }

  std::unique_ptr<RunCgroup> cgroup;
  if (config_.cgroup_mode != CgroupMode::kOff) {
    std::string mountinfo;
    if (int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC); fd >= 0) {
      char buf[8192];
      ssize_t n;
      while ((n = read(fd, buf, sizeof(buf))) > 0) mountinfo.append(buf, static_cast<size_t>(n));
      close(fd);
    }
    CgroupRequest req;
    req.base = config_.cgroup_base;
    req.name = NewId("sbx");
    req.max_tasks = policy.max_procs > 0 ? policy.max_procs + kBwrapTasks : 0;
    req.max_memory_bytes = policy.max_memory_mb * 1024 * 1024;
    cgroup = RunCgroup::Create(req, ParseCgroupMounts(mountinfo));
    if (config_.cgroup_mode == CgroupMode::kRequire &&
        (cgroup->dirs().empty() || (req.max_tasks > 0 && !cgroup->has_pids_limit()) ||
         (req.max_memory_bytes > 0 && !cgroup->has_memory_limit()))) {
      return absl::FailedPreconditionError(fmt::format(
          "cgroups required but not available: {}",
          cgroup->notes().empty() ? cgroup->description()
                                  : fmt::format("{}", fmt::join(cgroup->notes(), "; "))));
    }
    if (cgroup->empty_set()) cgroup.reset();
  }
  auto cgroup_notes = [&]() {
    return cgroup == nullptr ? std::string("cgroups off or not writable")
                             : fmt::format("{}", fmt::join(cgroup->notes(), "; "));
  };

  if (policy.max_procs > 0) {
    if (cgroup != nullptr && cgroup->has_pids_limit()) {
      how.push_back("procs=pids-cgroup");
    } else if (host_uid != 0) {
      // RLIMIT_NPROC counts every task of the host uid, so leave room for
      // the ones it already has (a dedicated run_as uid has none).
      int64_t existing = CountTasksOfUid(host_uid);
      rlim_t n = static_cast<rlim_t>(existing + policy.max_procs + kBwrapTasks);
      rlim(RLIMIT_NPROC, n, n);
      how.push_back(fmt::format("procs=rlimit-nproc(uid {})", host_uid));
    } else {
      return absl::FailedPreconditionError(fmt::format(
          "process limit of {} cannot be enforced: no writable pids cgroup ({}) and the "
          "sandbox would run as host root, for which the kernel ignores RLIMIT_NPROC; make a "
          "pids cgroup writable or set SandboxConfig.run_as_uid/run_as_gid",
          policy.max_procs, cgroup_notes()));
    }
  }
  if (policy.max_memory_mb > 0) {
    if (cgroup != nullptr && cgroup->has_memory_limit()) {
      how.push_back("memory=memory-cgroup");
    } else if (!policy.gpu) {
      rlim_t bytes = static_cast<rlim_t>(policy.max_memory_mb) * 1024 * 1024;
      if (policy.max_address_space_mb == 0) rlim(RLIMIT_AS, bytes, bytes);
      how.push_back("memory=rlimit-as(per-process)");
    } else {
      return absl::FailedPreconditionError(fmt::format(
          "memory limit of {} MB for a GPU run cannot be enforced: no writable memory cgroup "
          "({}), and RLIMIT_AS would break CUDA's address-space reservations; make a memory "
          "cgroup writable or set max_memory_mb to 0",
          policy.max_memory_mb, cgroup_notes()));
    }
  }
  how.push_back(cgroup != nullptr && cgroup->has_cpu_accounting() ? "accounting=cgroup"
                                                                  : "accounting=none");
  if (!unsafe) how.insert(how.begin(), "isolation=bwrap+seccomp");

  // ---- Descriptors.
  int pipes[2];
  if (pipe2(pipes, O_CLOEXEC) != 0) return ErrnoError("pipe", errno);
  UniqueFd out_r(pipes[0]), out_w(pipes[1]);
  if (pipe2(pipes, O_CLOEXEC) != 0) return ErrnoError("pipe", errno);
  UniqueFd err_r(pipes[0]), err_w(pipes[1]);
  if (pipe2(pipes, O_CLOEXEC) != 0) return ErrnoError("pipe", errno);
  UniqueFd exec_r(pipes[0]), exec_w(pipes[1]);
  UniqueFd status_r, status_w;
  if (!unsafe) {
    if (pipe2(pipes, O_CLOEXEC) != 0) return ErrnoError("pipe", errno);
    status_r = UniqueFd(pipes[0]);
    status_w = UniqueFd(pipes[1]);
  }
  UniqueFd stdin_src;
  if (policy.stdin_fd >= 0) {
    stdin_src = UniqueFd(fcntl(policy.stdin_fd, F_DUPFD_CLOEXEC, 0));
    if (!stdin_src.valid()) return ErrnoError("dup stdin_fd", errno);
  } else {
    stdin_src = UniqueFd(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!stdin_src.valid()) return ErrnoError("open /dev/null", errno);
  }
  UniqueFd wake(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return ErrnoError("eventfd", errno);

  // ---- What to exec.
  ChildPlan plan;
  std::vector<std::string> exec_argv;
  std::vector<std::string> exec_env;
  std::string exec_path;
  UniqueFd args_fd, seccomp_fd, passwd_fd, group_fd, hosts_fd;
  plan.fds.push_back({stdin_src.get(), 0, false});
  plan.fds.push_back({out_w.get(), 1, false});
  plan.fds.push_back({err_w.get(), 2, false});
  if (!unsafe) {
    BwrapRequest req;
    req.config = &config_;
    req.policy = &policy;
    req.layout = ProbeHostLayout();
    ASSIGN_OR_RETURN(req.gpu_binds, GpuDeviceBinds(policy));
    req.scratch_dir = scratch;
    req.ro_paths = ro;
    req.rw_paths = rw;
    req.system_ro_paths = system_ro;
    req.cwd = cwd;
    std::string packed;
    for (const std::string& a : BuildBwrapArgs(req)) {
      packed += a;
      packed.push_back('\0');
    }
    ASSIGN_OR_RETURN(args_fd, MemfdWith("pkforge-bwrap-args", packed));
    ASSIGN_OR_RETURN(
        seccomp_fd,
        MemfdWith("pkforge-seccomp", policy.allow_perf_events ? seccomp_perf_ : seccomp_default_));
    ASSIGN_OR_RETURN(passwd_fd, MemfdWith("pkforge-passwd", SandboxPasswd(config_)));
    ASSIGN_OR_RETURN(group_fd, MemfdWith("pkforge-group", SandboxGroup(config_)));
    ASSIGN_OR_RETURN(hosts_fd, MemfdWith("pkforge-hosts", SandboxHosts(config_)));
    plan.fds.push_back({args_fd.get(), kFdArgs, false});
    plan.fds.push_back({seccomp_fd.get(), kFdSeccomp, false});
    plan.fds.push_back({status_w.get(), kFdStatus, false});
    plan.fds.push_back({passwd_fd.get(), kFdPasswd, false});
    plan.fds.push_back({group_fd.get(), kFdGroup, false});
    plan.fds.push_back({hosts_fd.get(), kFdHosts, false});
    exec_path = bwrap;
    exec_argv = {"bwrap", "--args", std::to_string(kFdArgs), "--"};
    exec_argv.insert(exec_argv.end(), argv.begin(), argv.end());
    // bwrap's own environment is visible inside as /proc/1/environ (its
    // init is PID 1), so it gets none at all.
  } else {
    exec_path = ResolveOnPath(argv[0], policy.env);
    exec_argv = argv;
    exec_env = policy.env;
    plan.chdir_path = cwd.c_str();
  }
  for (std::string& s : exec_argv) plan.argv.push_back(s.data());
  plan.argv.push_back(nullptr);
  for (std::string& s : exec_env) plan.envp.push_back(s.data());
  plan.envp.push_back(nullptr);
  plan.exec_path = exec_path.c_str();
  plan.limits = limits;
  plan.error_fd = exec_w.get();
  plan.parent_pid = getpid();
  if (drop_uid) {
    plan.uid = config_.run_as_uid;
    plan.gid = config_.run_as_gid;
    if (!scratch.empty()) {
      // The sandbox (an unprivileged uid now) must be able to write scratch.
      ChownTree(scratch, static_cast<uid_t>(config_.run_as_uid),
                static_cast<gid_t>(config_.run_as_gid));
    }
  }
  std::vector<int> cgroup_fds;
  if (cgroup != nullptr) {
    ASSIGN_OR_RETURN(cgroup_fds, cgroup->OpenProcsFiles());
    plan.cgroup_procs_fds = cgroup_fds;
  }
  if (plan.fds.size() > 16) return absl::InternalError("too many descriptors for the child");

  // ---- Start.
  auto state = std::make_unique<SandboxProcess::State>();
  state->mode = unsafe ? SandboxMode::kUnsafeNoSandbox : SandboxMode::kIsolated;
  state->timeout_ms = policy.timeout_ms;
  state->max_output = policy.max_output_bytes;
  state->kill_grace_ms = config_.kill_grace_ms;
  state->enforcement = fmt::format("{}", fmt::join(how, " "));

  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    for (int fd : cgroup_fds) close(fd);
    return ErrnoError("fork", err);
  }
  if (pid == 0) RunChild(plan);  // never returns

  for (int fd : cgroup_fds) close(fd);
  out_w.Reset();
  err_w.Reset();
  status_w.Reset();
  exec_w.Reset();
  state->pidfd = UniqueFd(PidfdOpen(pid));  // our unreaped child: cannot fail on reuse
  state->stdout_r = std::move(out_r);
  state->stderr_r = std::move(err_r);
  state->status_r = std::move(status_r);
  state->wake = std::move(wake);
  state->cgroup = std::move(cgroup);

  // The child reports a failure before exec through the close-on-exec pipe;
  // end-of-file means exec succeeded.
  int32_t msg[2] = {0, 0};
  ssize_t got;
  do {
    got = read(exec_r.get(), msg, sizeof(msg));
  } while (got < 0 && errno == EINTR);
  std::unique_ptr<SandboxProcess> process(new SandboxProcess(std::move(state)));
  process->pid_ = pid;
  if (!process->state_->pidfd.valid()) {
    return ErrnoError("pidfd_open of the sandbox process", errno);  // dtor kills + reaps
  }
  if (got == static_cast<ssize_t>(sizeof(msg))) {
    std::string what = fmt::format("{} ({})", ChildStepName(msg[0]),
                                   msg[0] == kStepExec ? exec_path : std::string("sandbox"));
    absl::Status s = ErrnoError(what, msg[1]);
    if (msg[0] == kStepExec && unsafe) {
      return msg[1] == EACCES ? absl::PermissionDeniedError(s.message())
                              : absl::NotFoundError(s.message());
    }
    return absl::FailedPreconditionError(
        fmt::format("sandbox set-up failed while {}", AsStd(s.message())));
  }
  return process;
}

// ---------------------------------------------------------------------------

absl::StatusOr<std::string> ReadFileBeneath(const std::string& dir,
                                            const std::string& relative_path, int64_t max_bytes) {
  UniqueFd dirfd(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dirfd.valid()) return ErrnoError(fmt::format("open {}", dir), errno);
  struct open_how how;
  std::memset(&how, 0, sizeof(how));
  how.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  UniqueFd fd(static_cast<int>(
      syscall(SYS_openat2, dirfd.get(), relative_path.c_str(), &how, sizeof(how))));
  if (!fd.valid()) {
    int err = errno;
    if (err == EXDEV || err == ELOOP) {
      return absl::PermissionDeniedError(
          fmt::format("{} escapes {} (symlink, '..' or mount crossing)", relative_path, dir));
    }
    return ErrnoError(fmt::format("open {} beneath {}", relative_path, dir), err);
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoError("fstat", errno);
  if (!S_ISREG(st.st_mode)) {
    return absl::PermissionDeniedError(fmt::format("{} is not a regular file", relative_path));
  }
  if (st.st_size > max_bytes) {
    return absl::ResourceExhaustedError(fmt::format("{} is {} bytes, over the {} byte limit",
                                                    relative_path, st.st_size, max_bytes));
  }
  std::string data;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(fmt::format("read {}", relative_path), errno);
    if (n == 0) break;
    if (static_cast<int64_t>(data.size()) + n > max_bytes) {
      return absl::ResourceExhaustedError(fmt::format("{} grew past the limit", relative_path));
    }
    data.append(buf, static_cast<size_t>(n));
  }
  return data;
}

}  // namespace pkforge::sandbox
