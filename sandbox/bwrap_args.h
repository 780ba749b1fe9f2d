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
  std::vector<std::string> gpu_devices;  // present /dev/nvidia* nodes and dirs
  std::vector<std::string> proc_masks;   // present /proc entries hidden behind /dev/null
  // Host-wide /proc entries bound read-only: every top-level directory that
  // is not a process (sys, sysvipc, driver, irq, ...) and every writable
  // top-level file (sysrq-trigger, mtrr, ...).
  std::vector<std::string> proc_read_only;
};

// Looks at this host: which /bin, /lib* are links (merged /usr) or
// directories, which loader/alternatives files exist in /etc, which NVIDIA
// device nodes exist.
HostLayout ProbeHostLayout();

// Contents of the synthetic /etc files (no host accounts or host names leak).
std::string SandboxPasswd(const SandboxConfig& config);
std::string SandboxGroup(const SandboxConfig& config);
std::string SandboxHosts(const SandboxConfig& config);

struct BwrapRequest {
  const SandboxConfig* config = nullptr;
  const SandboxPolicy* policy = nullptr;
  HostLayout layout;
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
