// Per-run control groups: the exact process limit, the memory cap, tree-wide
// CPU/memory accounting and a reliable "kill everything" for one sandbox.
//
// Works with cgroup v2 (one unified hierarchy, e.g. Ubuntu 24.04 under
// systemd) and cgroup v1 (one hierarchy per controller, e.g. this project's
// CI containers), and with a mix (v2 mounted beside v1 controllers): each
// controller is taken from v2 when the v2 hierarchy offers it, otherwise from
// its v1 hierarchy. Per-run groups live at
//   <mount>/<base>/<run name>      e.g. /sys/fs/cgroup/pkforge/sbx_01J...
// `base` defaults to "pkforge" directly under the hierarchy root. Why not
// under the caller's own cgroup: on v2 a cgroup that holds processes cannot
// delegate controllers to children ("no internal processes"), so the caller
// would have to move itself first; a deployment that wants the sandboxes
// accounted inside its service points `base` at a delegated subtree instead.
//
// Nothing here is fatal by itself: Create() returns what it could set up and
// the caller (sandbox.cc) decides whether a missing controller is an error
// for the requested limits (it never silently drops a requested limit).
//
// Thread safety: a RunCgroup is owned by one SandboxProcess; KillAll() may be
// called from any thread (it only reads cgroup files and sends signals).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace pkforge::sandbox {

struct CgroupMount {
  std::string path;                      // mount point, e.g. /sys/fs/cgroup or /sys/fs/cgroup/pids
  int version = 0;                       // 1 or 2
  std::vector<std::string> controllers;  // v1: from mount options; v2: empty here
};

// Cgroup mounts listed in a /proc/self/mountinfo text.
std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo);

struct CgroupRequest {
  std::string base = "pkforge";  // relative to each hierarchy's root
  std::string name;              // per-run leaf name (unique)
  int64_t max_tasks = 0;         // pids.max; 0 = no pids controller needed
  int64_t max_memory_bytes = 0;  // memory limit; 0 = none (accounting still wanted)
};

struct CgroupStats {
  int64_t cpu_usec = -1;  // user+sys of every task that ever ran in it
  int64_t memory_peak_bytes = -1;
  int64_t oom_kills = -1;        // processes the kernel OOM-killed in the group
  int64_t pids_limit_hits = -1;  // forks refused by pids.max
};

class RunCgroup {
 public:
  // Creates the per-run groups it can. Never fails outright: `notes()` says
  // what could not be set up and the has_*() accessors what could.
  static std::unique_ptr<RunCgroup> Create(const CgroupRequest& request,
                                           const std::vector<CgroupMount>& mounts);
  ~RunCgroup();  // Destroy() if not done yet
  RunCgroup(const RunCgroup&) = delete;
  RunCgroup& operator=(const RunCgroup&) = delete;

  bool has_pids_limit() const { return pids_limited_; }
  bool has_memory_limit() const { return memory_limited_; }
  bool has_cpu_accounting() const { return !cpu_dir_.empty(); }
  bool empty_set() const { return dirs_.empty(); }

  // Open cgroup.procs of every group, O_WRONLY|O_CLOEXEC. The forked child
  // writes "0" to each before exec (joins itself: no window in which it runs
  // outside its limits). The caller closes them after the fork.
  absl::StatusOr<std::vector<int>> OpenProcsFiles() const;

  // SIGKILL every task in every group (cgroup.kill where the kernel has it).
  void KillAll() const;
  // True when no task is left in any group.
  bool IsEmpty() const;
  CgroupStats ReadStats() const;
  // Kills what is left, waits up to `timeout_ms` for the groups to empty and
  // removes them. Idempotent.
  absl::Status Destroy(int64_t timeout_ms = 2000);

  // Human-readable: which hierarchy serves which purpose, and what failed.
  const std::string& description() const { return description_; }
  const std::vector<std::string>& notes() const { return notes_; }
  const std::vector<std::string>& dirs() const { return dirs_; }

 private:
  RunCgroup() = default;

  std::vector<std::string> dirs_;  // every per-run directory we created
  std::string pids_dir_, memory_dir_, cpu_dir_;
  int pids_version_ = 0, memory_version_ = 0, cpu_version_ = 0;
  bool pids_limited_ = false, memory_limited_ = false;
  bool destroyed_ = false;
  std::string description_;
  std::vector<std::string> notes_;
};

}  // namespace pkforge::sandbox
