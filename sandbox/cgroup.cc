#include "sandbox/cgroup.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/status.h"

namespace pkforge::sandbox {
namespace {

bool ReadSmallFile(const std::string& path, std::string* out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
    if (out->size() > (1 << 20)) break;
  }
  close(fd);
  return true;
}

// Returns 0 or the errno of the failed open/write.
int WriteSmallFile(const std::string& path, std::string_view data) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n = write(fd, data.data(), data.size());
  int err = n == static_cast<ssize_t>(data.size()) ? 0 : (n < 0 ? errno : EIO);
  close(fd);
  return err;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Value of `key` in a flat-keyed cgroup file ("key value" per line).
int64_t KeyedValue(const std::string& text, std::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (parts.size() == 2 && AsStd(parts[0]) == key) {
      int64_t v;
      if (absl::SimpleAtoi(parts[1], &v)) return v;
    }
  }
  return -1;
}

int64_t SingleValue(const std::string& path) {
  std::string text;
  if (!ReadSmallFile(path, &text)) return -1;
  int64_t v;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &v)) return -1;
  return v;
}

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// mkdir that tolerates an existing directory; returns 0 or errno.
int MkdirIfMissing(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return 0;
  return errno;
}

// Enables `controllers` for the children of `dir` (v2). 0 or errno.
int EnableSubtree(const std::string& dir, const std::vector<std::string>& controllers) {
  std::string current;
  ReadSmallFile(dir + "/cgroup.subtree_control", &current);
  std::vector<std::string> have =
      absl::StrSplit(absl::StripAsciiWhitespace(current), ' ', absl::SkipEmpty());
  for (const std::string& c : controllers) {
    if (Contains(have, c)) continue;
    int err = WriteSmallFile(dir + "/cgroup.subtree_control", "+" + c);
    if (err != 0) return err;
  }
  return 0;
}

std::string ErrText(int err) { return std::strerror(err); }

}  // namespace

std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo) {
  std::vector<CgroupMount> mounts;
  for (absl::string_view line : absl::StrSplit(AsAbsl(mountinfo), '\n')) {
    // id parent maj:min root mountpoint options [optional...] - fstype source superopts
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || dash + 3 > f.end()) continue;
    absl::string_view fstype = *(dash + 1);
    CgroupMount m;
    m.path = std::string(f[4]);
    if (fstype == "cgroup2") {
      m.version = 2;
    } else if (fstype == "cgroup") {
      m.version = 1;
      // Super options mix controllers with flags (xattr, noprefix, name=...).
      static constexpr std::string_view kControllers[] = {
          "cpu",   "cpuacct",    "cpuset",   "memory",  "devices", "freezer", "net_cls",
          "blkio", "perf_event", "net_prio", "hugetlb", "pids",    "rdma",    "misc"};
      for (absl::string_view opt : absl::StrSplit(*(dash + 3), ',')) {
        if (std::find(std::begin(kControllers), std::end(kControllers), AsStd(opt)) !=
            std::end(kControllers)) {
          m.controllers.emplace_back(opt);
        }
      }
    } else {
      continue;
    }
    mounts.push_back(std::move(m));
  }
  return mounts;
}

std::unique_ptr<RunCgroup> RunCgroup::Create(const CgroupRequest& request,
                                             const std::vector<CgroupMount>& mounts) {
  std::unique_ptr<RunCgroup> cg(new RunCgroup());
  if (request.name.empty() || request.base.empty() || request.base.front() == '/' ||
      absl::StrContains(request.base, "..") || absl::StrContains(request.name, "/")) {
    cg->notes_.push_back("invalid cgroup base or run name");
    return cg;
  }

  // The v2 hierarchy, preferring the standard mount point.
  const CgroupMount* v2 = nullptr;
  for (const CgroupMount& m : mounts) {
    if (m.version == 2 && (v2 == nullptr || m.path == "/sys/fs/cgroup")) v2 = &m;
  }
  std::vector<std::string> v2_controllers;
  if (v2 != nullptr) {
    std::string text;
    ReadSmallFile(v2->path + "/cgroup.controllers", &text);
    v2_controllers = absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
  }
  auto v1_mount = [&](std::string_view controller) -> const CgroupMount* {
    for (const CgroupMount& m : mounts) {
      if (m.version == 1 && Contains(m.controllers, controller)) return &m;
    }
    return nullptr;
  };

  // Creates <mount>/<base>/<name> (v2: enabling `controllers` on the way) and
  // returns the leaf, or "" with a note.
  auto make_leaf = [&](const std::string& mount, int version,
                       const std::vector<std::string>& controllers) -> std::string {
    std::string leaf = mount + "/" + request.base + "/" + request.name;
    if (Contains(cg->dirs_, leaf)) return leaf;
    std::string dir = mount;
    if (version == 2 && !controllers.empty()) {
      if (int err = EnableSubtree(dir, controllers); err != 0) {
        cg->notes_.push_back(
            fmt::format("enabling {} in {}: {}", fmt::join(controllers, ","), dir, ErrText(err)));
        return "";
      }
    }
    for (absl::string_view part : absl::StrSplit(request.base, '/', absl::SkipEmpty())) {
      dir += "/" + std::string(part);
      if (int err = MkdirIfMissing(dir); err != 0) {
        cg->notes_.push_back(fmt::format("mkdir {}: {}", dir, ErrText(err)));
        return "";
      }
      if (version == 2 && !controllers.empty()) {
        if (int err = EnableSubtree(dir, controllers); err != 0) {
          cg->notes_.push_back(
              fmt::format("enabling {} in {}: {}", fmt::join(controllers, ","), dir, ErrText(err)));
          return "";
        }
      }
    }
    if (mkdir(leaf.c_str(), 0755) != 0) {
      cg->notes_.push_back(fmt::format("mkdir {}: {}", leaf, ErrText(errno)));
      return "";
    }
    cg->dirs_.push_back(leaf);
    return leaf;
  };

  // v2 first for the controllers it offers: one directory serves them all.
  std::vector<std::string> want_v2;
  if (v2 != nullptr) {
    if (Contains(v2_controllers, "pids")) want_v2.push_back("pids");
    if (Contains(v2_controllers, "memory")) want_v2.push_back("memory");
  }
  std::string v2_leaf;
  if (!want_v2.empty()) {
    v2_leaf = make_leaf(v2->path, 2, want_v2);
    if (!v2_leaf.empty()) {
      if (Contains(want_v2, "pids")) cg->pids_dir_ = v2_leaf, cg->pids_version_ = 2;
      if (Contains(want_v2, "memory")) cg->memory_dir_ = v2_leaf, cg->memory_version_ = 2;
      cg->cpu_dir_ = v2_leaf, cg->cpu_version_ = 2;  // cpu.stat exists in every v2 group
    }
  }
  if (cg->pids_dir_.empty()) {
    if (const CgroupMount* m = v1_mount("pids")) {
      std::string leaf = make_leaf(m->path, 1, {});
      if (!leaf.empty()) cg->pids_dir_ = leaf, cg->pids_version_ = 1;
    } else if (request.max_tasks > 0) {
      cg->notes_.push_back("no cgroup hierarchy offers the pids controller");
    }
  }
  if (cg->memory_dir_.empty()) {
    if (const CgroupMount* m = v1_mount("memory")) {
      std::string leaf = make_leaf(m->path, 1, {});
      if (!leaf.empty()) cg->memory_dir_ = leaf, cg->memory_version_ = 1;
    } else if (request.max_memory_bytes > 0) {
      cg->notes_.push_back("no cgroup hierarchy offers the memory controller");
    }
  }
  if (cg->cpu_dir_.empty()) {
    if (const CgroupMount* m = v1_mount("cpuacct")) {
      std::string leaf = make_leaf(m->path, 1, {});
      if (!leaf.empty()) cg->cpu_dir_ = leaf, cg->cpu_version_ = 1;
    } else if (v2 != nullptr) {
      std::string leaf = make_leaf(v2->path, 2, {});
      if (!leaf.empty()) cg->cpu_dir_ = leaf, cg->cpu_version_ = 2;
    }
  }

  // Limits.
  if (!cg->pids_dir_.empty() && request.max_tasks > 0) {
    int err = WriteSmallFile(cg->pids_dir_ + "/pids.max", std::to_string(request.max_tasks));
    if (err == 0) {
      cg->pids_limited_ = true;
    } else {
      cg->notes_.push_back(fmt::format("writing {}/pids.max: {}", cg->pids_dir_, ErrText(err)));
    }
  }
  if (!cg->memory_dir_.empty() && request.max_memory_bytes > 0) {
    const std::string bytes = std::to_string(request.max_memory_bytes);
    int err;
    if (cg->memory_version_ == 2) {
      err = WriteSmallFile(cg->memory_dir_ + "/memory.max", bytes);
      // Swap would let a hog exceed the cap by paging out.
      if (err == 0 && Exists(cg->memory_dir_ + "/memory.swap.max")) {
        WriteSmallFile(cg->memory_dir_ + "/memory.swap.max", "0");
      }
    } else {
      err = WriteSmallFile(cg->memory_dir_ + "/memory.limit_in_bytes", bytes);
      if (err == 0 && Exists(cg->memory_dir_ + "/memory.memsw.limit_in_bytes")) {
        WriteSmallFile(cg->memory_dir_ + "/memory.memsw.limit_in_bytes", bytes);
      }
    }
    if (err == 0) {
      cg->memory_limited_ = true;
    } else {
      cg->notes_.push_back(
          fmt::format("setting the memory limit in {}: {}", cg->memory_dir_, ErrText(err)));
    }
  }

  auto where = [](const std::string& dir, int version) {
    return dir.empty() ? std::string("none") : fmt::format("v{}:{}", version, dir);
  };
  cg->description_ = fmt::format(
      "pids={} memory={} cpu={}", where(cg->pids_dir_, cg->pids_version_),
      where(cg->memory_dir_, cg->memory_version_), where(cg->cpu_dir_, cg->cpu_version_));
  return cg;
}

RunCgroup::~RunCgroup() {
  if (!destroyed_) (void)Destroy();
}

absl::StatusOr<std::vector<int>> RunCgroup::OpenProcsFiles() const {
  std::vector<int> fds;
  for (const std::string& dir : dirs_) {
    int fd = open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      for (int f : fds) close(f);
      return ErrnoError(fmt::format("opening {}/cgroup.procs", dir), err);
    }
    fds.push_back(fd);
  }
  return fds;
}

void RunCgroup::KillAll() const {
  for (const std::string& dir : dirs_) {
    // cgroup.kill (Linux 5.14+, v2) kills atomically, even tasks forking now.
    if (WriteSmallFile(dir + "/cgroup.kill", "1") == 0) continue;
    std::string procs;
    if (!ReadSmallFile(dir + "/cgroup.procs", &procs)) continue;
    const std::string member = dir.substr(dir.rfind('/'));  // "/<run name>"
    for (absl::string_view line : absl::StrSplit(procs, '\n', absl::SkipEmpty())) {
      int pid;
      if (!absl::SimpleAtoi(line, &pid) || pid <= 1) continue;
      // Pin the process with a pidfd, then confirm it is still a member
      // before signalling: a pid read from cgroup.procs may have been reused
      // by an unrelated process in between.
      int pfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
      if (pfd < 0) continue;
      std::string cgroups;
      if (ReadSmallFile(fmt::format("/proc/{}/cgroup", pid), &cgroups) &&
          absl::StrContains(cgroups, member)) {
        syscall(SYS_pidfd_send_signal, pfd, SIGKILL, nullptr, 0);
      }
      close(pfd);
    }
  }
}

bool RunCgroup::IsEmpty() const {
  for (const std::string& dir : dirs_) {
    std::string text;
    if (ReadSmallFile(dir + "/cgroup.events", &text)) {  // v2
      if (KeyedValue(text, "populated") > 0) return false;
      continue;
    }
    if (ReadSmallFile(dir + "/cgroup.procs", &text) && !absl::StripAsciiWhitespace(text).empty()) {
      return false;
    }
  }
  return true;
}

CgroupStats RunCgroup::ReadStats() const {
  CgroupStats s;
  std::string text;
  if (!cpu_dir_.empty()) {
    if (cpu_version_ == 2) {
      if (ReadSmallFile(cpu_dir_ + "/cpu.stat", &text)) s.cpu_usec = KeyedValue(text, "usage_usec");
    } else {
      int64_t ns = SingleValue(cpu_dir_ + "/cpuacct.usage");
      if (ns >= 0) s.cpu_usec = ns / 1000;
    }
  }
  if (!memory_dir_.empty()) {
    if (memory_version_ == 2) {
      s.memory_peak_bytes = SingleValue(memory_dir_ + "/memory.peak");  // Linux 5.19+
      if (ReadSmallFile(memory_dir_ + "/memory.events", &text)) {
        s.oom_kills = KeyedValue(text, "oom_kill");
      }
    } else {
      s.memory_peak_bytes = SingleValue(memory_dir_ + "/memory.max_usage_in_bytes");
      if (ReadSmallFile(memory_dir_ + "/memory.oom_control", &text)) {
        s.oom_kills = KeyedValue(text, "oom_kill");
      }
    }
  }
  if (!pids_dir_.empty() && ReadSmallFile(pids_dir_ + "/pids.events", &text)) {
    s.pids_limit_hits = KeyedValue(text, "max");
  }
  return s;
}

absl::Status RunCgroup::Destroy(int64_t timeout_ms) {
  if (destroyed_) return absl::OkStatus();
  destroyed_ = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  KillAll();
  while (!IsEmpty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    KillAll();
  }
  absl::Status status;
  for (const std::string& dir : dirs_) {
    // rmdir can briefly report EBUSY after the last task is reaped.
    while (rmdir(dir.c_str()) != 0) {
      if (errno == ENOENT) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        status = ErrnoError(fmt::format("removing cgroup {}", dir), errno);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return status;
}

}  // namespace pkforge::sandbox
