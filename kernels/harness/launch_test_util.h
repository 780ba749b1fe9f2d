// Test-only: run `pkforge-worker launch` as a child process and judge what it
// printed, for the red-team tests (redteam_test, redteam_gpu_test).
//
// The verdict must be the judge's only output: stdout has to be exactly one
// line holding one JSON EvaluationResult. Anything else (a forged line a
// candidate managed to put there, a missing result because the judge was
// killed or stopped) is reported as such, never parsed around.
//
// Candidates record every process they start in $PKF_REDTEAM_DIR/pids
// ("<pid> <starttime>", kernels/testdata/redteam/redteam.h);
// StillAlive() lists those still running after the launch returned (and
// SIGKILLs them, so one failing test cannot disturb the next).
//
// Thread safety: none (tests run their launches one after the other).
#pragma once

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "google/protobuf/util/json_util.h"
#include "pkforge/v1/common.pb.h"

namespace pkforge::kernels::testing {

using Result = pkforge::v1::EvaluationResult;

struct Captured {
  int status = -1;
  std::string output;
};

// Runs `cmd` through the shell; its exit status (as pclose returns it) and
// everything it printed on stdout.
inline Captured RunCapture(const std::string& cmd) {
  Captured c;
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return c;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) c.output.append(buf, n);
  c.status = pclose(f);
  return c;
}

struct Verdict {
  bool parsed = false;      // stdout was exactly one JSON line
  std::string channel_error;  // why not
  int exit_code = -1;
  double seconds = 0;
  Result result;
  std::string raw;
  std::string stderr_text;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// `cmd` must not redirect stdout; its stderr goes to stderr_file.
inline Verdict RunJudge(const std::string& cmd, const std::string& stderr_file) {
  Verdict v;
  const auto t0 = std::chrono::steady_clock::now();
  const Captured c = RunCapture(cmd + " 2>" + stderr_file);
  v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  v.exit_code = WIFEXITED(c.status) ? WEXITSTATUS(c.status) : -1;
  v.raw = c.output;
  v.stderr_text = ReadFile(stderr_file).substr(0, 4000);
  const size_t nl = v.raw.find('\n');
  if (v.raw.empty()) {
    v.channel_error = fmt::format("no result on the judge's stdout (exit code {})", v.exit_code);
  } else if (nl != v.raw.size() - 1) {
    v.channel_error = fmt::format(
        "the judge's stdout is not exactly one line ({} bytes, {} newlines): a forged or "
        "interleaved result",
        v.raw.size(), std::count(v.raw.begin(), v.raw.end(), '\n'));
  } else if (!google::protobuf::util::JsonStringToMessage(v.raw, &v.result).ok()) {
    v.channel_error = "the judge's stdout is not one JSON EvaluationResult";
  } else {
    v.parsed = true;
  }
  return v;
}

// The check that ended a CHEAT_DETECTED evaluation: the judge's message is
// "<check>: <detail>"; failing non-flag checks otherwise.
inline std::set<std::string> FailingChecks(const Result& r) {
  std::set<std::string> out;
  const std::string& m = r.message();
  const size_t colon = m.find(':');
  if (colon != std::string::npos) out.insert(m.substr(0, colon));
  for (const auto& c : r.cheat_checks())
    if (!c.passed() && !c.flag_only()) out.insert(c.check());
  return out;
}

// Start time of a live process (0 when gone). A process is alive while any
// of its threads is: its leader alone may read Z after leaving with
// SYS_exit while other threads run on (as candidate_processes.cc decides).
inline unsigned long long StartTime(int pid) {
  const std::string s = ReadFile(fmt::format("/proc/{}/stat", pid));
  const size_t close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(s.substr(close + 2));
  std::string field;
  bool leader_dead = false;
  unsigned long long start = 0;
  for (int i = 3; i <= 22 && (in >> field); ++i) {
    if (i == 3) leader_dead = field == "Z" || field == "X";
    if (i == 22) start = std::stoull(field);
  }
  if (!leader_dead) return start;
  DIR* d = opendir(fmt::format("/proc/{}/task", pid).c_str());
  if (d == nullptr) return 0;
  bool live_thread = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string t = ReadFile(fmt::format("/proc/{}/task/{}/stat", pid, e->d_name));
    const size_t c = t.rfind(')');
    if (c != std::string::npos && c + 2 < t.size() && t[c + 2] != 'Z' && t[c + 2] != 'X')
      live_thread = true;
  }
  closedir(d);
  return live_thread ? start : 0;
}

// Processes recorded in dir/pids that still run (same pid and start time);
// each is SIGKILLed after being listed. The file is the candidate's to
// write, and any process's start time is public in /proc: only processes
// started after this test process are listed or killed, never this process
// or its ancestors (a candidate naming them would otherwise have the test,
// run as its user, kill the test itself or any job of that user started
// earlier: red team round 16's note).
inline std::vector<int> StillAlive(const std::string& dir) {
  std::vector<int> alive;
  std::set<int> ours;  // this process and its ancestors
  for (int p = getpid(); p > 1 && ours.insert(p).second;) {
    const std::string st = ReadFile(fmt::format("/proc/{}/stat", p));
    const size_t close = st.rfind(')');
    int ppid = 0;
    if (close == std::string::npos || std::sscanf(st.c_str() + close + 2, "%*c %d", &ppid) != 1)
      break;
    p = ppid;
  }
  const unsigned long long born = StartTime(getpid());
  std::istringstream in(ReadFile(dir + "/pids"));
  std::string line;
  std::set<int> seen;
  while (std::getline(in, line)) {
    int pid = 0;
    unsigned long long start = 0;
    if (std::sscanf(line.c_str(), "%d %llu", &pid, &start) != 2) continue;
    if (pid <= 1 || ours.count(pid) || !seen.insert(pid).second) continue;
    if (start < born) continue;
    if (StartTime(pid) != 0 && StartTime(pid) == start) {
      alive.push_back(pid);
      kill(pid, SIGKILL);
    }
  }
  return alive;
}

}  // namespace pkforge::kernels::testing
