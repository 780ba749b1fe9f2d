#include "sandbox/sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "sandbox/bwrap_args.h"
#include "sandbox/child.h"
#include "sandbox/cgroup.h"
#include "sandbox/process_state.h"
#include "sandbox/seccomp_filter.h"

namespace pkforge::sandbox {
namespace {

using internal::ChildPlan;
using internal::ChildStepName;
using internal::kStepExec;
using internal::PidfdOpen;
using internal::RunChild;
using internal::Trimmed;

// bwrap itself runs two tasks inside the limits (the monitor and the
// sandbox's init), so the process limit is raised by this much.
constexpr int64_t kBwrapTasks = 3;
constexpr int64_t kMinOpenFiles = 32;  // bwrap needs a handful during set-up

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

// ---------------------------------------------------------------------------

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

namespace {

// Spawn's checks of the command and the policy; the canonical paths to bind.
struct SpawnPaths {
  std::string scratch;
  std::vector<std::string> ro, rw, system_ro;
  std::string cwd;
};
absl::StatusOr<SpawnPaths> ValidateSpawn(const SandboxConfig& config,
                                         const std::vector<std::string>& argv,
                                         const SandboxPolicy& policy) {
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
  for (const std::string& p : config.system_ro_paths) {
    struct stat sst;
    if (stat(p.c_str(), &sst) != 0) continue;  // optional by nature (e.g. /opt/nvidia)
    ASSIGN_OR_RETURN(std::string c, CanonicalPolicyPath("system ro path", p));
    system_ro.push_back(std::move(c));
  }
  std::string cwd = !policy.cwd.empty()                              ? policy.cwd
                    : scratch.empty() || policy.scratch_read_only ? std::string("/tmp")
                                                                   : scratch;
  if (cwd.front() != '/' || ContainsNul(cwd)) {
    return absl::InvalidArgumentError(fmt::format("cwd '{}': must be absolute", cwd));
  }

  return SpawnPaths{std::move(scratch), std::move(ro), std::move(rw), std::move(system_ro),
                    std::move(cwd)};
}

// policy.cpus as a set, each CPU one this process may run on (a set the
// child could not take would fail after fork, with less context).
absl::StatusOr<cpu_set_t> CpuSetOf(const std::vector<int>& cpus) {
  cpu_set_t own;
  CPU_ZERO(&own);
  if (sched_getaffinity(0, sizeof own, &own) != 0) return ErrnoError("sched_getaffinity", errno);
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE || !CPU_ISSET(c, &own))
      return absl::InvalidArgumentError(
          fmt::format("cpus: CPU {} is not one this process may run on", c));
    CPU_SET(c, &set);
  }
  return set;
}

// The resource limits of one run and how each is enforced (rlimits set by
// the child, a per-run cgroup); a requested limit that nothing here can
// enforce is an error, never dropped.
struct LimitPlan {
  std::vector<std::string> how;  // SandboxResult::enforcement, word by word
  std::vector<ChildPlan::Limit> limits;
  std::unique_ptr<RunCgroup> cgroup;  // null: cgroups off or not writable
};
absl::StatusOr<LimitPlan> PlanLimits(const SandboxConfig& config, const SandboxPolicy& policy,
                                     uid_t host_uid, bool unsafe) {
  // ---- Limits and how each is enforced. A requested limit that nothing
  // here can enforce is an error, never dropped.
  std::vector<std::string> how;
  std::vector<ChildPlan::Limit> limits;
  auto rlim = [&limits](int resource, rlim_t soft, rlim_t hard) {
    limits.push_back({resource, {soft, hard}});
  };
  // No core dump at all: 1, not 0. A file dump needs at least a page; a
  // pipe core_pattern (systemd-coredump, apport) ignores the limit, except
  // that 1 makes the kernel skip the dump, so no helper starts as root
  // outside the sandbox with a process's memory (red team round 25).
  // (0 where this process's own hard limit is 0: a limit cannot be raised.)
  {
    rlimit own{};
    const rlim_t core = getrlimit(RLIMIT_CORE, &own) == 0 && own.rlim_max < 1 ? 0 : 1;
    rlim(RLIMIT_CORE, core, core);
  }
  if (policy.cpu_seconds > 0) {
    // SIGXCPU at the soft limit, SIGKILL one second later.
    rlim(RLIMIT_CPU, static_cast<rlim_t>(policy.cpu_seconds),
         static_cast<rlim_t>(policy.cpu_seconds + 1));
    how.push_back("cpu_time=rlimit(per-process)");
  }
  if (!policy.cpus.empty()) {
    std::string list;
    for (int c : policy.cpus) list += (list.empty() ? "" : ",") + std::to_string(c);
    how.push_back("cpus=affinity(" + list + ")");
  }
  if (policy.nice != 0) how.push_back("nice=" + std::to_string(policy.nice));
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
  if (config.cgroup_mode != CgroupMode::kOff) {
    std::string mountinfo;
    if (int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC); fd >= 0) {
      char buf[8192];
      ssize_t n;
      while ((n = read(fd, buf, sizeof(buf))) > 0) mountinfo.append(buf, static_cast<size_t>(n));
      close(fd);
    }
    CgroupRequest req;
    req.base = config.cgroup_base;
    req.name = NewId("sbx");
    req.max_tasks = policy.max_procs > 0 ? policy.max_procs + kBwrapTasks : 0;
    req.max_memory_bytes = policy.max_memory_mb * 1024 * 1024;
    cgroup = RunCgroup::Create(req, ParseCgroupMounts(mountinfo));
    if (config.cgroup_mode == CgroupMode::kRequire &&
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

  return LimitPlan{std::move(how), std::move(limits), std::move(cgroup)};
}

}  // namespace

// Long (~180 lines) on purpose: it is the fork point. Validation and the
// limit plan are functions of their own (ValidateSpawn, PlanLimits); what is
// left prepares the descriptors and the child's plan, whose raw pointers
// (argv, envp, exec path) and descriptors must stay owned by this frame
// until fork() and the exec-error read, then forks and hands the parent's
// ends to the SandboxProcess. Split further, those owners would have to be
// passed between functions with the plan that points into them.
absl::StatusOr<std::unique_ptr<SandboxProcess>> Sandbox::Spawn(const std::vector<std::string>& argv,
                                                               const SandboxPolicy& policy) const {
  ASSIGN_OR_RETURN(SpawnPaths paths, ValidateSpawn(config_, argv, policy));
  const std::string& scratch = paths.scratch;
  const std::string& cwd = paths.cwd;

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

  ASSIGN_OR_RETURN(LimitPlan limit_plan, PlanLimits(config_, policy, host_uid, unsafe));
  const std::vector<std::string>& how = limit_plan.how;
  const std::vector<ChildPlan::Limit>& limits = limit_plan.limits;
  std::unique_ptr<RunCgroup> cgroup = std::move(limit_plan.cgroup);

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
    req.ro_paths = paths.ro;
    req.rw_paths = paths.rw;
    req.system_ro_paths = paths.system_ro;
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
  if (!policy.cpus.empty()) {
    ASSIGN_OR_RETURN(plan.cpus, CpuSetOf(policy.cpus));
    plan.set_cpus = true;
  }
  if (policy.nice < 0 || policy.nice > 19)
    return absl::InvalidArgumentError(fmt::format("nice: {} (0..19)", policy.nice));
  plan.nice = policy.nice;
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
