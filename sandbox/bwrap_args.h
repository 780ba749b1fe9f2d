// Builds bubblewrap's argument list for one run: the filesystem view,
// namespaces, environment and descriptor plumbing. Pure: everything it needs
// about the host is passed in as a HostLayout, so tests can check the view
// without running bwrap.
//
// The options travel through `--args FD` (a memfd) rather than argv so that
// /proc/1/cmdline inside the sandbox shows only "bwrap --args 3 -- COMMAND",
// not the host paths and settings. (bwrap ignores a command inside the
// --args data, so the command itself follows on the real argv.)
//
// Thread safety: pure functions (ProbeHostLayout reads the filesystem).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sandbox/sandbox.h"

namespace pkforge::sandbox {

// Descriptor numbers inside the bwrap process (set up by the forked child).
inline constexpr int kFdArgs = 3;
inline constexpr int kFdSeccomp = 4;
inline constexpr int kFdStatus = 5;
inline constexpr int kFdPasswd = 6;
inline constexpr int kFdGroup = 7;
inline constexpr int kFdHosts = 8;
inline constexpr int kFdExecError = 9;  // close-on-exec; reports a failed exec
inline constexpr int kFirstFreeFd = 10;

struct HostLayout {
  struct TopLevel {
    std::string path;  // "/bin", "/lib64", ...
    bool is_symlink = false;
    std::string target;  // symlink target when is_symlink
  };
  std::vector<TopLevel> top_level;       // present /bin /sbin /lib* entries
  std::vector<std::string> etc_entries;  // present /etc files the toolchain reads
  std::vector<std::string> proc_masks;   // present /proc entries hidden behind /dev/null
  // Host-wide /proc entries bound read-only: every top-level directory that
  // is not a process (sys, sysvipc, driver, irq, ...) and every writable
  // top-level file (sysrq-trigger, mtrr, ...).
  std::vector<std::string> proc_read_only;
};

// Looks at this host: which /bin, /lib* are links (merged /usr) or
// directories, which loader/alternatives files exist in /etc, which /proc
// entries exist.
HostLayout ProbeHostLayout();

// One device node (or directory of nodes) bound into the sandbox.
struct DeviceBind {
  std::string host;    // e.g. "/dev/nvidia2" (below the dev_dir given)
  std::string inside;  // always "/dev/<name>"
  bool operator==(const DeviceBind&) const = default;
};

// The NVIDIA device nodes a run with `policy` gets (empty without
// policy.gpu), read from `dev_dir` ("/dev") and, for the index -> minor
// mapping, `driver_gpus_dir` ("/proc/driver/nvidia/gpus": one directory per
// GPU named by its PCI address, whose `information` file has "Device Minor:").
//   policy.gpus empty: every dev_dir/nvidia* entry (sorted by name).
//   policy.gpus given: dev_dir/nvidia<minor> of each GPU in ascending index,
//     then whichever of nvidiactl, nvidia-uvm, nvidia-uvm-tools,
//     nvidia-modeset, nvidia-caps exist. GPU index i is the i-th entry of
//     driver_gpus_dir in PCI address order (the driver's and nvidia-smi's
//     order); when that directory is absent or empty, minor = index.
// INVALID_ARGUMENT for a negative or repeated index, FAILED_PRECONDITION
// naming the missing node or GPU when the host lacks one (never a silent
// bind of fewer GPUs than asked).
absl::StatusOr<std::vector<DeviceBind>> GpuDeviceBinds(
    const SandboxPolicy& policy, const std::string& dev_dir = "/dev",
    const std::string& driver_gpus_dir = "/proc/driver/nvidia/gpus");

// Contents of the synthetic /etc files (no host accounts or host names leak).
std::string SandboxPasswd(const SandboxConfig& config);
std::string SandboxGroup(const SandboxConfig& config);
std::string SandboxHosts(const SandboxConfig& config);

struct BwrapRequest {
  const SandboxConfig* config = nullptr;
  const SandboxPolicy* policy = nullptr;
  HostLayout layout;
  std::vector<DeviceBind> gpu_binds;  // GpuDeviceBinds(policy); used when policy.gpu
  // Canonical (realpath) host paths, validated by the caller.
  std::string scratch_dir;
  std::vector<std::string> ro_paths;
  std::vector<std::string> rw_paths;
  std::vector<std::string> system_ro_paths;
  std::string cwd;  // inside
};

// bwrap's options (what goes into the --args memfd); the command is not
// included.
std::vector<std::string> BuildBwrapArgs(const BwrapRequest& request);

}  // namespace pkforge::sandbox
