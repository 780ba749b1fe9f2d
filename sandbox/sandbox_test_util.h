// Helpers shared by the sandbox tests: temporary directories, the probe
// program, running pkforge-sandbox as a subprocess, scanning host processes.
//
// Thread safety: test-only helpers, used from the test's main thread.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sandbox/sandbox.h"

namespace pkforge::sandbox::testing {

inline std::string ProbePath() { return PKF_SANDBOX_PROBE; }
inline std::string ProbeDir() { return std::filesystem::path(PKF_SANDBOX_PROBE).parent_path(); }
inline std::string CliPath() { return PKF_SANDBOX_CLI; }

// A fresh directory under /var/tmp (not /tmp, so that "invisible inside" is
// not merely the private /tmp hiding it), removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string templ = "/var/tmp/pkforge-sandbox-test-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) std::abort();
    path_ = templ;
    chmod(path_.c_str(), 0755);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }
  std::string MakeDir(const std::string& name) const {
    std::string p = Sub(name);
    std::filesystem::create_directories(p);
    chmod(p.c_str(), 0755);
    return p;
  }

 private:
  std::string path_;
};

inline void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

inline bool FileExists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

inline std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Values of "key=value" lines in probe output.
inline std::vector<std::string> Values(const std::string& text, const std::string& key) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + "=", 0) == 0) out.push_back(line.substr(key.size() + 1));
  }
  return out;
}
inline std::string Value(const std::string& text, const std::string& key) {
  auto v = Values(text, key);
  return v.empty() ? std::string("<missing>") : v.front();
}

// Host pids whose command line contains `token`.
inline std::vector<pid_t> HostProcessesWith(const std::string& token) {
  std::vector<pid_t> pids;
  DIR* dir = opendir("/proc");
  while (dir != nullptr) {
    struct dirent* e = readdir(dir);
    if (e == nullptr) break;
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string cmdline = ReadFileOrEmpty(std::string("/proc/") + e->d_name + "/cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline.find(token) != std::string::npos) pids.push_back(atoi(e->d_name));
  }
  if (dir != nullptr) closedir(dir);
  return pids;
}

// True while `pid` exists and is not a zombie (a zombie has exited; only its
// parent has yet to collect the status).
inline bool IsAlive(pid_t pid) {
  std::string stat = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (stat.empty() || paren == std::string::npos || paren + 2 >= stat.size()) return false;
  char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

// The sandbox every test uses: its own cgroup base so leftovers are obvious.
inline std::unique_ptr<Sandbox> TestSandbox(SandboxConfig config = {}) {
  config.cgroup_base = "pkforge-test";
  auto sandbox = Sandbox::Create(config);
  EXPECT_TRUE(sandbox.ok()) << sandbox.status();
  return sandbox.ok() ? std::move(*sandbox) : nullptr;
}

// A policy that sees the probe program and uses `scratch`.
inline SandboxPolicy ProbePolicy(const std::string& scratch) {
  SandboxPolicy p;
  p.scratch_dir = scratch;
  p.ro_paths = {ProbeDir()};
  p.env = {"PATH=/usr/bin:/bin"};
  p.timeout_ms = 30'000;
  p.max_memory_mb = 1024;
  return p;
}

struct CliRun {
  int rc = -1;
  std::string out, err;
};

// Runs pkforge-sandbox with `args` (the CLI's own environment is this test's
// plus `extra_env`), feeding `input` on stdin. `uid` >= 0: run as that uid.
inline CliRun RunCli(const std::vector<std::string>& args,
                     const std::vector<std::string>& extra_env = {}, const std::string& input = "",
                     int uid = -1) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) std::abort();
  std::vector<std::string> argv_s = {CliPath()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
  env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (auto& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    if (uid >= 0) {
      if (setgroups(0, nullptr) != 0 || setresgid(uid, uid, uid) != 0 ||
          setresuid(uid, uid, uid) != 0) {
        _exit(99);
      }
    }
    execve(argv[0], argv.data(), envp.data());
    _exit(98);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (!input.empty()) {
    ssize_t ignored = write(in[1], input.data(), input.size());
    (void)ignored;
  }
  close(in[1]);
  CliRun r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) continue;
    for (auto& f : fds) {
      if (f.fd < 0 || f.revents == 0) continue;
      char buf[65536];
      ssize_t n = read(f.fd, buf, sizeof(buf));
      if (n <= 0) {
        close(f.fd);
        f.fd = -1;
        --open_fds;
        continue;
      }
      (f.fd == out[0] ? r.out : r.err).append(buf, static_cast<size_t>(n));
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace pkforge::sandbox::testing
