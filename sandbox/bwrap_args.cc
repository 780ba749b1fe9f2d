#include "sandbox/bwrap_args.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "common/files.h"
#include "absl/strings/numbers.h"

namespace pkforge::sandbox {
namespace {

// What compilers and the dynamic loader read from /etc. Everything else in
// /etc (accounts, keys, host configuration) stays outside the view.
constexpr const char* kEtcEntries[] = {
    "/etc/ld.so.cache",  "/etc/ld.so.conf", "/etc/ld.so.conf.d",
    "/etc/alternatives",  // Debian's cc/c++/ld links point through here
    "/etc/localtime",
};

// /proc entries that show host-wide state no candidate needs (keyring
// descriptions, timers, kernel log, kernel memory): hidden, as Docker does.
constexpr const char* kProcMasks[] = {
    "/proc/keys",          "/proc/key-users", "/proc/timer_list", "/proc/sched_debug",
    "/proc/latency_stats", "/proc/kcore",     "/proc/kmsg",       "/proc/sysrq-trigger",
};

constexpr const char* kTopLevel[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};

}  // namespace

HostLayout ProbeHostLayout() {
  HostLayout layout;
  for (const char* path : kTopLevel) {
    struct stat st;
    if (lstat(path, &st) != 0) continue;
    HostLayout::TopLevel entry;
    entry.path = path;
    if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t n = readlink(path, buf, sizeof(buf) - 1);
      if (n <= 0) continue;
      entry.is_symlink = true;
      entry.target.assign(buf, static_cast<size_t>(n));
    } else if (!S_ISDIR(st.st_mode)) {
      continue;
    }
    layout.top_level.push_back(std::move(entry));
  }
  for (const char* path : kEtcEntries) {
    struct stat st;
    if (stat(path, &st) == 0) layout.etc_entries.emplace_back(path);
  }
  if (DIR* dir = opendir("/proc")) {
    while (struct dirent* e = readdir(dir)) {
      std::string name = e->d_name;
      if (name == "." || name == ".." ||
          name.find_first_not_of("0123456789") == std::string::npos) {
        continue;  // processes: the sandbox's own procfs shows only its own
      }
      std::string path = "/proc/" + name;
      struct stat st;
      if (lstat(path.c_str(), &st) != 0) continue;
      bool masked =
          std::find(std::begin(kProcMasks), std::end(kProcMasks), path) != std::end(kProcMasks);
      if (S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && (st.st_mode & 0222) != 0 && !masked)) {
        layout.proc_read_only.push_back(path);
      }
    }
    closedir(dir);
    std::sort(layout.proc_read_only.begin(), layout.proc_read_only.end());
  }
  for (const char* path : kProcMasks) {
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) layout.proc_masks.emplace_back(path);
  }
  return layout;
}

namespace {

// The device minor of every GPU the driver knows, in PCI address order
// (directory names such as "0000:18:00.0" sort that way: fixed-width
// lower-case hex). Empty when the driver directory is absent.
absl::StatusOr<std::vector<int>> DriverMinors(const std::string& driver_gpus_dir) {
  std::vector<int> minors;
  for (const std::string& bus : ListDirSorted(driver_gpus_dir)) {
    const std::string info_path = driver_gpus_dir + "/" + bus + "/information";
    std::ifstream in(info_path);
    std::string line;
    int minor = -1;
    while (std::getline(in, line)) {
      constexpr std::string_view kKey = "Device Minor:";
      if (line.rfind(kKey, 0) != 0) continue;
      absl::string_view value = absl::StripAsciiWhitespace(absl::string_view(line).substr(kKey.size()));
      if (!absl::SimpleAtoi(value, &minor) || minor < 0) minor = -1;
      break;
    }
    if (minor < 0) {
      return absl::FailedPreconditionError(
          fmt::format("gpus: no \"Device Minor:\" in {}", info_path));
    }
    minors.push_back(minor);
  }
  return minors;
}

bool PathExists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

}  // namespace

absl::StatusOr<std::vector<DeviceBind>> GpuDeviceBinds(const SandboxPolicy& policy,
                                                       const std::string& dev_dir,
                                                       const std::string& driver_gpus_dir) {
  std::vector<DeviceBind> binds;
  if (!policy.gpu) {
    if (!policy.gpus.empty()) {
      return absl::InvalidArgumentError("gpus: given without gpu (set gpu to bind them)");
    }
    return binds;
  }
  auto bind = [&](const std::string& name) {
    binds.push_back({dev_dir + "/" + name, "/dev/" + name});
  };
  if (policy.gpus.empty()) {  // every GPU: the operator's explicit choice
    for (const std::string& name : ListDirSorted(dev_dir)) {
      if (name.rfind("nvidia", 0) == 0) bind(name);
    }
    return binds;
  }
  std::set<int> wanted;
  for (int gpu : policy.gpus) {
    if (gpu < 0) return absl::InvalidArgumentError(fmt::format("gpus: negative index {}", gpu));
    if (!wanted.insert(gpu).second) {
      return absl::InvalidArgumentError(fmt::format("gpus: index {} given twice", gpu));
    }
  }
  absl::StatusOr<std::vector<int>> minors = DriverMinors(driver_gpus_dir);
  if (!minors.ok()) return minors.status();
  for (int gpu : wanted) {
    int minor = gpu;
    if (!minors->empty()) {
      if (gpu >= static_cast<int>(minors->size())) {
        return absl::FailedPreconditionError(fmt::format(
            "gpus: GPU {} does not exist (the driver lists {} in {})", gpu, minors->size(),
            driver_gpus_dir));
      }
      minor = (*minors)[static_cast<size_t>(gpu)];
    }
    const std::string name = fmt::format("nvidia{}", minor);
    if (!PathExists(dev_dir + "/" + name)) {
      return absl::FailedPreconditionError(
          fmt::format("gpus: GPU {} has no device node {}/{}", gpu, dev_dir, name));
    }
    bind(name);
  }
  // Shared by every GPU: the control node (required), unified memory, the
  // mode-setting node and MIG capabilities, as nvidia-container-toolkit binds.
  if (!PathExists(dev_dir + "/nvidiactl")) {
    return absl::FailedPreconditionError(fmt::format("gpus: {}/nvidiactl does not exist", dev_dir));
  }
  for (const char* name :
       {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "nvidia-caps"}) {
    if (PathExists(dev_dir + "/" + name)) bind(name);
  }
  return binds;
}

std::string SandboxPasswd(const SandboxConfig& config) {
  return fmt::format(
      "root:x:0:0:root:/root:/bin/sh\n"
      "sandbox:x:{}:{}:pkforge sandbox:/tmp:/bin/sh\n"
      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
      config.inside_uid, config.inside_gid);
}

std::string SandboxGroup(const SandboxConfig& config) {
  return fmt::format("root:x:0:\nsandbox:x:{}:\nnogroup:x:65534:\n", config.inside_gid);
}

std::string SandboxHosts(const SandboxConfig& config) {
  return fmt::format(
      "127.0.0.1\tlocalhost\n127.0.1.1\t{}\n::1\tlocalhost ip6-localhost ip6-loopback\n",
      config.hostname);
}

std::vector<std::string> BuildBwrapArgs(const BwrapRequest& r) {
  const SandboxConfig& config = *r.config;
  const SandboxPolicy& policy = *r.policy;
  std::vector<std::string> a;
  auto add = [&a](std::initializer_list<std::string> items) {
    a.insert(a.end(), items.begin(), items.end());
  };

  // Namespaces: user (explicit, so that --disable-userns is accepted and a
  // refused user namespace is an error rather than skipped), pid, net (only
  // a loopback interface, which bwrap brings up), ipc, uts, cgroup, mount.
  add({"--unshare-all", "--unshare-user", "--disable-userns"});
  // If we (or the thread that started us) die, the sandbox dies too; and the
  // command gets no controlling terminal (TIOCSTI and friends).
  add({"--die-with-parent", "--new-session", "--cap-drop", "ALL"});
  add({"--uid", std::to_string(config.inside_uid), "--gid", std::to_string(config.inside_gid)});
  add({"--hostname", config.hostname});

  add({"--clearenv"});
  for (const std::string& kv : policy.env) {
    size_t eq = kv.find('=');
    add({"--setenv", kv.substr(0, eq), kv.substr(eq + 1)});
  }

  // Read-only toolchain view. /usr covers /usr/local/cuda and the loader.
  add({"--ro-bind", "/usr", "/usr"});
  for (const HostLayout::TopLevel& t : r.layout.top_level) {
    if (t.is_symlink) {
      add({"--symlink", t.target, t.path});
    } else {
      add({"--ro-bind", t.path, t.path});
    }
  }
  for (const std::string& e : r.layout.etc_entries) add({"--ro-bind", e, e});
  add({"--ro-bind-data", std::to_string(kFdPasswd), "/etc/passwd"});
  add({"--ro-bind-data", std::to_string(kFdGroup), "/etc/group"});
  add({"--ro-bind-data", std::to_string(kFdHosts), "/etc/hosts"});

  // A procfs of the new pid namespace (only sandbox processes), a minimal
  // /dev (null, zero, full, random, urandom, tty, pts), private tmpfs /tmp
  // and /dev/shm with a size cap (their pages are memory).
  add({"--proc", "/proc"});
  // Host-wide /proc read-only. Essential when the caller is root: the
  // sandbox's processes then keep host uid 0 (in a user namespace, without
  // capabilities), and procfs grants writes to uid-0-owned files such as
  // /proc/sys/kernel/core_pattern (host code execution) or sysrq-trigger by
  // uid alone; bwrap's own covering of /proc/sys is skipped in that case (it
  // tests the directory, which is not writable, not the files). The sources
  // are the host's procfs, which shows the same host-wide entries (and
  // /proc/sys resolves network and UTS values for the reader's namespaces).
  // Not the whole /proc: the CUDA driver needs to write its own
  // /proc/self entries.
  for (const std::string& p : r.layout.proc_read_only) add({"--ro-bind", p, p});
  for (const std::string& m : r.layout.proc_masks) add({"--ro-bind", "/dev/null", m});
  add({"--dev", "/dev"});
  if (policy.mask_endless_devices)
    for (const char* d : {"/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"})
      add({"--ro-bind", "/dev/null", d});
  const std::string tmpfs_bytes = std::to_string(policy.tmpfs_mb * 1024 * 1024);
  if (policy.tmpfs_mb > 0) add({"--size", tmpfs_bytes});
  add({"--tmpfs", "/tmp"});
  if (policy.tmpfs_mb > 0) add({"--size", tmpfs_bytes});
  add({"--tmpfs", "/dev/shm"});

  if (policy.gpu) {
    for (const DeviceBind& dev : r.gpu_binds) add({"--dev-bind", dev.host, dev.inside});
    // NVML and NCCL's topology detection read PCI/NUMA topology from /sys.
    add({"--ro-bind", "/sys", "/sys"});
  }

  for (const std::string& p : r.system_ro_paths) add({"--ro-bind", p, p});
  for (const std::string& p : r.ro_paths) add({"--ro-bind", p, p});
  if (!r.scratch_dir.empty())
    add({r.policy != nullptr && r.policy->scratch_read_only ? "--ro-bind" : "--bind", r.scratch_dir,
         r.scratch_dir});
  for (const std::string& p : r.rw_paths) add({"--bind", p, p});

  // bwrap's root is a tmpfs; without this the command could write (and fill
  // memory) anywhere outside the mounts above.
  add({"--remount-ro", "/"});
  // bwrap's /dev is an unbounded tmpfs; nothing needs to create files there
  // (device nodes stay writable: they are special files, and /dev/shm and
  // /dev/pts are mounts of their own).
  add({"--remount-ro", "/dev"});
  add({"--chdir", r.cwd});

  add({"--seccomp", std::to_string(kFdSeccomp)});
  add({"--json-status-fd", std::to_string(kFdStatus)});
  return a;
}

}  // namespace pkforge::sandbox
