// The sandbox every candidate-derived command runs in (docs/design.md section 6).
//
// Contract
//   Sandbox::Run(argv, policy) runs argv inside a fresh sandbox and returns a
//   SandboxResult once the command *and every process it started* are gone.
//   Sandbox::Spawn() is the same in two steps (start now, Wait() later), for
//   callers that stream output, cancel, or run a launcher that forks several
//   ranks: everything started inside one sandbox shares its IPC namespace,
//   its private /dev/shm and /tmp, and its loopback-only network, and nothing
//   else.
//
//   Isolation (mode kIsolated) is bubblewrap with new user, pid, mount, net,
//   ipc, uts and cgroup namespaces, all capabilities dropped, no_new_privs,
//   a seccomp filter (seccomp_filter.h), a read-only view of the toolchain
//   (/usr, the /lib* links, a few /etc files, /usr/local/cuda by way of
//   /usr), a private writable scratch directory, private /tmp and /dev/shm,
//   GPU device nodes only when policy.gpu (only policy.gpus' when given), an
//   environment of exactly
//   policy.env, and rlimits; per-run cgroups (cgroup.h) add an exact process
//   limit, a memory cap and tree-wide accounting where they are writable.
//   Everything is killed at the wall-clock deadline or when the main command
//   exits, whichever is first: bwrap's init is PID 1 of the sandbox's pid
//   namespace, and when it dies the kernel kills every process in the
//   namespace, setsid/double-fork or not.
//
//   If any part of the isolation cannot be set up (bwrap missing, user
//   namespaces refused, a requested limit that nothing on this host can
//   enforce, cgroups required but not writable) Spawn/Run return
//   FAILED_PRECONDITION naming what failed. There is never a silent fallback:
//   the only way to run without isolation is policy.unsafe_no_sandbox, which
//   is logged loudly and reported in SandboxResult::mode.
//
//   Statuses: INVALID_ARGUMENT for a malformed policy or argv;
//   FAILED_PRECONDITION for set-up failures; NOT_FOUND / PERMISSION_DENIED
//   when the command itself cannot be executed inside the sandbox (like
//   exit codes 127 / 126 of a shell); INTERNAL for unexpected system errors.
//   A command that runs and fails is not an error: it is a SandboxResult.
//
// Thread safety
//   Sandbox is immutable after Create(): Run/Spawn/SelfTest may be called from
//   any number of threads at once. A SandboxProcess is used by one thread,
//   except Kill(), which any thread may call at any time. The thread that
//   calls Spawn() must outlive the SandboxProcess (or call Wait() itself):
//   the kernel's parent-death signal, which kills the sandbox if this process
//   dies, fires when the *thread* that forked it exits.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pkforge::sandbox {

// How per-run cgroups are used.
enum class CgroupMode {
  kAuto,     // use what is writable; limits that need a cgroup and cannot get
             // one use the documented rlimit fallback or fail (never dropped)
  kRequire,  // FAILED_PRECONDITION unless pids+memory cgroups can be made
  kOff,      // never touch cgroups (limits use the rlimit fallbacks only)
};

// Process-wide settings: one per binary (executor, pkforge-sandbox).
struct SandboxConfig {
  // bubblewrap binary. Empty: search $PATH, then the directory of the running
  // executable (deployments ship bwrap beside pkforge-executor on hosts that
  // lack the package).
  std::string bwrap_path;
  CgroupMode cgroup_mode = CgroupMode::kAuto;
  // Per-run cgroups are made at <hierarchy root>/<cgroup_base>/<run id>.
  std::string cgroup_base = "pkforge";
  // When >= 0 and this process is root: drop to this host uid/gid before
  // starting bwrap (which then uses an unprivileged user namespace). The
  // sandbox then never holds host-root's uid, RLIMIT_NPROC becomes
  // enforceable without a pids cgroup, and the scratch directory is chowned
  // to it. Needs unprivileged user namespaces on the host.
  int64_t run_as_uid = -1;
  int64_t run_as_gid = -1;
  // The uid/gid processes see inside the sandbox (mapped onto the caller's or
  // run_as uid; never real root).
  int64_t inside_uid = 1000;
  int64_t inside_gid = 1000;
  std::string hostname = "pkforge-sandbox";
  // Extra read-only paths every sandbox gets (e.g. /opt/nvidia for ncu).
  std::vector<std::string> system_ro_paths;
  // After a kill, how long to wait for the tree to disappear before giving up
  // (then INTERNAL and a loud log: something is stuck in the kernel).
  int64_t kill_grace_ms = 10'000;
};

// What one command may do. In-class defaults are the safe general-purpose
// values; the executor sets its own per phase.
struct SandboxPolicy {
  // Host directory bound read-write at the same path and used as the working
  // directory. Must exist. Empty: no writable directory except /tmp.
  std::string scratch_dir;
  // scratch_dir bound read-only instead, and the working directory /tmp
  // (unless cwd says otherwise): for runs of untrusted code that only need
  // to read what is there (the executor's worker runs: a writable host
  // folder has no disk quota; red team round 14 r14_disk_fill). It is still
  // handed to run_as_uid, so that uid can read it. Without the sandbox
  // (unsafe_no_sandbox) nothing makes it read-only.
  bool scratch_read_only = false;
  // Host paths bound at the same path, read-only / read-write.
  std::vector<std::string> ro_paths;
  std::vector<std::string> rw_paths;
  // GPU access (bwrap_args.h GpuDeviceBinds). Without `gpu` no GPU device
  // node exists inside. With it, /sys is bound read-only (NVML and NCCL's
  // topology detection read it) and:
  //   gpus empty:  every /dev/nvidia* node (operators: pkforge-sandbox --gpu);
  //   gpus given:  only /dev/nvidia<minor> of those GPUs plus the shared
  //                control nodes (nvidiactl, nvidia-uvm, nvidia-uvm-tools,
  //                nvidia-modeset, nvidia-caps/), so concurrent evaluations on
  //                one host cannot open each other's GPUs.
  // `gpus` are host indices in the driver's PCI bus order (nvidia-smi's
  // index; CUDA's ordinal with CUDA_DEVICE_ORDER=PCI_BUS_ID), mapped to device
  // minors through /proc/driver/nvidia/gpus. Inside, CUDA enumerates only
  // the bound GPUs, renumbered 0..n-1 in ascending host index: do not also
  // set CUDA_VISIBLE_DEVICES to host indices (README "GPUs").
  bool gpu = false;
  std::vector<int> gpus;
  // The device files that read without end (/dev/zero, /dev/full,
  // /dev/random, /dev/urandom) read as /dev/null inside: a compile that
  // `#include`s one ends at once instead of growing to max_memory_mb (API
  // fuzzing: 8 GiB and 43 s per request). Not for code that needs entropy
  // from them (NCCL's unique id reads /dev/urandom).
  bool mask_endless_devices = false;
  // CPUs the command and everything it starts may run on (the affinity of
  // the sandbox's first process, inherited): the executor gives concurrent
  // evaluations disjoint sets (executor/cpu_lanes.h), so one evaluation's
  // processes never run on the CPUs where another's ranks are pinned and
  // timed. Candidate ranks cannot widen theirs (their seccomp filter makes
  // sched_setaffinity a no-op). Each must be one this process may use.
  // Empty: this process's own set.
  std::vector<int> cpus;
  // Niceness of the command and everything it starts (0: unchanged, up to
  // 19): the executor's compiles run at 19 on the CPUs they share with host
  // evaluations, so the processes being timed there take precedence (red
  // team round 18 r18_compile_burn burned a CPU for 120 s per request).
  int nice = 0;
  // The command's complete environment, NAME=VALUE. Nothing is inherited;
  // the only addition is PWD (the working directory), which bwrap sets.
  std::vector<std::string> env;
  // Working directory inside; empty: scratch_dir, or /tmp without one.
  std::string cwd;
  // Descriptor to use as stdin (dup'ed; the caller keeps its own). -1: /dev/null.
  int stdin_fd = -1;

  // Limits; 0 disables one. Each is enforced or the call fails (see
  // SandboxResult::enforcement for the mechanism that was used).
  int64_t timeout_ms = 60'000;    // wall clock, whole tree
  int64_t cpu_seconds = 600;      // RLIMIT_CPU per process (SIGXCPU, then SIGKILL)
  int64_t max_file_mb = 1024;     // RLIMIT_FSIZE (SIGXFSZ / EFBIG)
  int64_t max_open_files = 1024;  // RLIMIT_NOFILE (EMFILE); at least 16
  int64_t max_procs = 512;        // tasks (processes+threads) in the sandbox
  // Resident memory of the whole sandbox (memory cgroup). Without a writable
  // memory cgroup: RLIMIT_AS per process when !gpu (CUDA reserves huge
  // address ranges, so not for gpu), otherwise FAILED_PRECONDITION.
  int64_t max_memory_mb = 8192;
  int64_t max_address_space_mb = 0;  // RLIMIT_AS, explicit, per process
  int64_t tmpfs_mb = 1024;           // size of the private /tmp and of /dev/shm
  // Captured per stream; the rest is drained and counted, never blocking the
  // command (0 captures nothing, it does not mean "unlimited").
  int64_t max_output_bytes = 1 << 20;

  bool allow_perf_events = false;  // profiling (nsys) needs perf_event_open
  // Run without namespaces/seccomp (rlimits, cgroups, deadline and the
  // environment scrub still apply). For hosts where isolation cannot work;
  // logged as a warning on every run and reported in the result.
  bool unsafe_no_sandbox = false;
};

enum class SandboxMode { kIsolated, kUnsafeNoSandbox };
std::string_view SandboxModeName(SandboxMode mode);

struct SandboxResult {
  // Exit status of the command when it exited; -1 when a signal ended it.
  // Inside bubblewrap, "killed by signal N" reaches us as exit status 128+N
  // (bwrap reports it so), so 129..192 are reported as term_signal N.
  int exit_code = -1;
  int term_signal = 0;      // 0 when it exited
  bool timed_out = false;   // the wall-clock deadline killed the tree
  bool killed = false;      // SandboxProcess::Kill() killed the tree
  bool oom_killed = false;  // the memory cgroup's OOM killer fired
  int64_t wall_ms = 0;
  int64_t cpu_ms = -1;       // user+sys of the whole tree; -1 unknown
  int64_t peak_rss_kb = -1;  // whole tree (cgroup) or largest process; -1 unknown
  std::string stdout_data;
  std::string stderr_data;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  int64_t stdout_total_bytes = 0;  // everything the command wrote, kept or not
  int64_t stderr_total_bytes = 0;
  SandboxMode mode = SandboxMode::kIsolated;
  // How each limit was enforced, e.g. "procs=pids-cgroup memory=memory-cgroup
  // cpu=rlimit ...". Recorded with every evaluation result.
  std::string enforcement;

  bool ok() const { return exit_code == 0 && term_signal == 0 && !timed_out && !killed; }
  // Shell convention (used by pkforge-sandbox): 124 on deadline, 128+N on
  // signal N, else the exit status.
  int ShellExitCode() const;
};

enum class OutputStream { kStdout, kStderr };
// Receives captured output as it arrives (only bytes within the cap).
using OutputCallback = std::function<void(OutputStream, std::string_view)>;

class Sandbox;

// One running sandbox. Destroying it kills and reaps the whole tree.
class SandboxProcess {
 public:
  ~SandboxProcess();
  SandboxProcess(const SandboxProcess&) = delete;
  SandboxProcess& operator=(const SandboxProcess&) = delete;

  // Host pid of the process we started (bwrap, or the command when unsafe).
  pid_t pid() const { return pid_; }

  // Blocks until the command has exited and the tree is gone, the deadline
  // passed (then kills), or Kill() was called; collects output (calling
  // `on_output` as it arrives) and accounting. Call at most once.
  absl::StatusOr<SandboxResult> Wait(const OutputCallback& on_output = nullptr);

  // Kills the whole tree now. Safe from any thread, any number of times,
  // before, during or after Wait().
  void Kill();

 private:
  friend class Sandbox;
  struct State;
  explicit SandboxProcess(std::unique_ptr<State> state);
  void KillTreeLocked();
  // Wait's second half: accounting and what the end of the run means.
  absl::StatusOr<SandboxResult> Conclude(SandboxResult result,
                                         std::optional<int64_t> exit_code_doc,
                                         const absl::Status& stuck);

  std::unique_ptr<State> state_;
  pid_t pid_ = -1;
  std::mutex mu_;  // guards reaping vs. signalling (pid reuse)
  std::atomic<bool> kill_requested_{false};
};

class Sandbox {
 public:
  // Validates the config and prepares the seccomp programs. Does not probe
  // isolation (see SelfTest); never fails because bwrap is missing, so that
  // unsafe policies still work where bwrap is absent.
  static absl::StatusOr<std::unique_ptr<Sandbox>> Create(SandboxConfig config = {});

  absl::StatusOr<std::unique_ptr<SandboxProcess>> Spawn(const std::vector<std::string>& argv,
                                                        const SandboxPolicy& policy) const;
  absl::StatusOr<SandboxResult> Run(const std::vector<std::string>& argv,
                                    const SandboxPolicy& policy,
                                    const OutputCallback& on_output = nullptr) const;

  // Runs `true` under a default policy (with `gpu` as given): OK when full
  // isolation works on this host, else the FAILED_PRECONDITION Spawn would
  // give. The executor calls this at start-up and refuses to start on error.
  absl::Status SelfTest(bool gpu = false) const;

  // The bwrap that will be used, or the error explaining why none was found.
  absl::StatusOr<std::string> BwrapPath() const;
  const SandboxConfig& config() const { return config_; }

 private:
  explicit Sandbox(SandboxConfig config) : config_(std::move(config)) {}
  SandboxConfig config_;
  std::string seccomp_default_;  // exported BPF, perf events denied
  std::string seccomp_perf_;     // exported BPF, perf events allowed
};

// Reads `relative_path` below `dir` for a trusted caller after a sandbox run,
// refusing anything that leaves `dir` through "..", an absolute path or a
// symlink (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), and anything that is
// not a regular file or is larger than `max_bytes`. Sandboxed code controls
// scratch contents, so the host must never follow links planted there.
absl::StatusOr<std::string> ReadFileBeneath(const std::string& dir,
                                            const std::string& relative_path, int64_t max_bytes);

}  // namespace pkforge::sandbox
