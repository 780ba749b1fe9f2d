// Shared helpers of the candidates merged from the former attack battery
// (kernels/testdata/redteam/atk_*.cc, one attack per file). Conventions:
//   - An attack on a trusted process that *succeeds* leaves a marker file in
//     $PKF_REDTEAM_DIR (the red-team test fails on any marker) and then computes
//     the right answer, so a judge that let it through would say OK; when the
//     exploit is refused the candidate writes a wrong answer (WRONG_OUTPUT).
//   - Every process a candidate starts is recorded as "<pid> <starttime>" in
//     $PKF_REDTEAM_DIR/pids (the format redteam.h uses); the test checks that none
//     is alive afterwards.
// Test-only code: each candidate uses a few of these helpers.
#pragma once
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "kernels/testdata/wrap_allreduce.inc"

namespace {

std::string Dir() {
  const char* d = getenv("PKF_REDTEAM_DIR");
  return d != nullptr ? d : "/tmp";
}

void Marker(const char* what) {
  const std::string path = Dir() + "/marker";
  FILE* f = fopen(path.c_str(), "a");
  if (f != nullptr) {
    fprintf(f, "%s (pid %d)\n", what, getpid());
    fclose(f);
  }
}

std::string ReadAll(const std::string& path);
void RecordPid(int pid) {
  // "<pid> <starttime>" (field 22 of /proc/<pid>/stat): a pid alone could be reused.
  const std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  std::string start = "0";
  if (close != std::string::npos) {
    size_t at = close + 2;
    for (int field = 3; field < 22 && at != std::string::npos; ++field) at = stat.find(' ', at) + 1;
    if (at != std::string::npos && at > 0) start = stat.substr(at, stat.find(' ', at) - at);
  }
  const std::string path = Dir() + "/pids";
  FILE* f = fopen(path.c_str(), "a");
  if (f != nullptr) {
    fprintf(f, "%d %s\n", pid, start.c_str());
    fclose(f);
  }
}

std::string ReadAll(const std::string& path) {
  std::string s;
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  close(fd);
  return s;
}

// Pids of the trusted reference ranks: their command line says so (a
// command line is readable by anyone).
std::vector<int> ReferencePids() {
  std::vector<int> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const int pid = atoi(e->d_name);
    if (pid <= 0) continue;
    std::string cmd = ReadAll("/proc/" + std::to_string(pid) + "/cmdline");
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find("rank --role ref") != std::string::npos) out.push_back(pid);
  }
  closedir(d);
  return out;
}

int Wrong(pkf_tensor* out) {
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < pkf_numel(&out[0]); ++i) y[i] = 1234.5f;
  return 0;
}

// Runs the exploit once per process (in setup or at the first call) and
// remembers whether it worked.
std::atomic<int> g_worked{-1};

int Finish(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out, int32_t n_out,
           void* stream, bool worked) {
  if (worked) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // keep the ranks in step
  return Wrong(out);
}

bool TryOpenAll(const std::vector<int>& pids, const char* what, int flags) {
  bool any = false;
  for (int pid : pids) {
    const std::string base = "/proc/" + std::to_string(pid) + "/" + what;
    if (std::string(what) == "fd" || std::string(what) == "map_files") {
      DIR* d = opendir(base.c_str());
      if (d == nullptr) continue;
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        const int fd = open((base + "/" + e->d_name).c_str(), flags);
        if (fd >= 0) {
          any = true;
          close(fd);
        }
      }
      closedir(d);
    } else {
      const int fd = open(base.c_str(), flags);
      if (fd >= 0) {
        any = true;
        close(fd);
      }
    }
  }
  return any;
}

}  // namespace
