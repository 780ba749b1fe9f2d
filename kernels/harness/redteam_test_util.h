// Shared by the red-team battery's files (redteam_test.cc, redteam_r19_test.cc):
// the verdicts a test accepts, one launch of a candidate with its assertions
// (Expect), and the cgroups some attacks are launched in.
//
// Thread safety: test helpers for one gtest thread; Expect sets environment
// variables of the test process.
#pragma once

#include <dirent.h>
#include <stdlib.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "gtest/gtest.h"
#include "kernels/harness/launch_test_util.h"

namespace pkforge::kernels::redteam {

using testing::FailingChecks;
using testing::ReadFile;
using testing::Result;
using testing::RunJudge;
using testing::StillAlive;
using testing::Verdict;

// One acceptable verdict: a status and, for CHEAT_DETECTED, the checks that
// may legitimately fire first.
struct Accept {
  Result::Status status;
  std::set<std::string> checks;
};
inline Accept Cheat(std::initializer_list<const char*> checks) {
  Accept a{Result::CHEAT_DETECTED, {}};
  for (const char* c : checks) a.checks.insert(c);
  return a;
}
inline const Accept kWrong{Result::WRONG_OUTPUT, {}};
inline const Accept kOk{Result::OK, {}};
inline const Accept kTimeout{Result::TIMEOUT, {}};
inline const Accept kRuntime{Result::RUNTIME_ERROR, {}};
// CHEAT_DETECTED by any check (for attacks whose fix is not decided yet).
inline const Accept kCheatAny{Result::CHEAT_DETECTED, {"*"}};

inline std::string NewDir(const std::string& name) {
  std::string t = ::testing::TempDir() + "/redteam_" + name + "_XXXXXX";
  char* d = mkdtemp(t.data());
  if (d == nullptr) return "/tmp";
  // Candidate ranks started by root drop to uid 65534 (containment.cc): they
  // must still be able to record their processes and log here.
  chmod(d, 0777);
  return std::string(d);
}

// The problem and size every launch uses (the battery is allreduce, tiny;
// a test that needs another sets them with ProblemScope).
inline std::string g_problem = "allreduce", g_size = "tiny";
struct ProblemScope {
  ProblemScope(const char* problem, const char* size) {
    g_problem = problem;
    g_size = size;
  }
  ~ProblemScope() {
    g_problem = "allreduce";
    g_size = "tiny";
  }
};

// Runs one candidate and asserts its verdict.
// `cgroup_procs`: a cgroup.procs file the launch joins first ("" = none).
// `max_speedup` > 0: an OK verdict (where an attack may get one because it
// had no effect) must also stay below that speedup.
// `as_nobody`: the launch runs as uid 65534 (setpriv; with `cgroup_procs` only).
// `out`: receives the parsed result (for bounds relative to a control's run).
inline void Expect(const std::string& name, std::vector<Accept> accept,
                   const std::string& extra = "", int timeout_s = 10,
                   const std::string& cgroup_procs = "", double max_speedup = 0,
                   bool as_nobody = false, Result* out = nullptr) {
  const std::string dir = NewDir(name);
  setenv("PKF_REDTEAM_DIR", dir.c_str(), 1);
  // An operator secret in the judge's environment (filtered from ranks).
  setenv("PKF_REDTEAM_SECRET_KEY", "redteam-planted-secret", 1);
  // Operator secrets under names a denylist of KEY/TOKEN/SECRET/PASSWORD
  // misses (environ_secret_names hunts them).
  setenv("PKF_REDTEAM_DB_PASSWD", "redteam-planted-passwd", 1);
  setenv("PKF_REDTEAM_AUTH", "Bearer redteam-planted-auth", 1);
  setenv("PKF_REDTEAM_CREDENTIALS", "redteam-planted-credentials", 1);
  setenv("PKF_REDTEAM_DSN", "postgres://pkforge:redteam-planted-dsn@db:5432/pkforge", 1);
  setenv("NV_REDTEAM_API_KEY", "redteam-planted-nv-key", 1);
  std::string cmd = fmt::format(
      "timeout -k 5 {} {} launch --problem {} --backend host --world-size 3 --dtype f32 "
      "--size {} --trials 2 --warmup 1 --iters 6 --timeout {} --json --candidate-writable {} {} "
      "{}/redteam_{}.so",
      timeout_s * 4 + 30, PKF_WORKER, g_problem, g_size, timeout_s, dir, extra, PKF_CANDIDATES,
      name);
  if (!cgroup_procs.empty())
    cmd = fmt::format("sh -c 'echo $$ > {} && exec {}{}'", cgroup_procs,
                      as_nobody ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "", cmd);
  const Verdict v = RunJudge(cmd, dir + "/judge_stderr");
  if (out != nullptr && v.parsed) *out = v.result;
  const std::vector<int> alive = StillAlive(dir);
  unsetenv("PKF_REDTEAM_DIR");
  const std::string log = ReadFile(dir + "/log").substr(0, 3000);
  const std::string context = fmt::format("{}\nstdout: {}\nstderr: {}\ncandidate log:\n{}", cmd,
                                          v.raw.substr(0, 3000), v.stderr_text, log);
  // Machine-readable line for the README table.
  std::printf("REDTEAM %s status=%s message=%s\n", name.c_str(),
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              v.parsed ? v.result.message().substr(0, 160).c_str() : v.channel_error.c_str());
  EXPECT_TRUE(alive.empty()) << fmt::format(
      "{} process(es) the candidate started were still alive after the launch returned: {}",
      alive.size(), fmt::join(alive, " "));
  ASSERT_TRUE(v.parsed) << v.channel_error << "\n" << context;
  const Result& r = v.result;
  bool ok = false;
  for (const Accept& a : accept) {
    if (a.status != r.status()) continue;
    if (a.status != Result::CHEAT_DETECTED) {
      ok = true;
      break;
    }
    for (const std::string& c : FailingChecks(r))
      if (a.checks.count(c) != 0 || a.checks.count("*") != 0) ok = true;
  }
  std::string wanted;
  for (const Accept& a : accept)
    wanted += fmt::format(" {}{}", Result::Status_Name(a.status),
                          a.checks.empty() ? "" : fmt::format("({})", fmt::join(a.checks, "|")));
  EXPECT_TRUE(ok) << name << ": got " << Result::Status_Name(r.status()) << " ("
                  << r.message().substr(0, 400) << "), expected one of" << wanted << "\n"
                  << context;
  EXPECT_NE(r.status(), Result::HARNESS_ERROR) << "a candidate provoked a harness error\n"
                                               << context;
  // Candidates from the former attack battery leave a marker when an exploit
  // on a trusted process worked (attacks_common.h).
  const std::string marker = ReadFile(dir + "/marker");
  EXPECT_TRUE(marker.empty()) << name << ": exploit worked: " << marker;
  if (r.status() == Result::OK && max_speedup > 0) {
    EXPECT_LT(r.speedup(), max_speedup) << name << " forged a speedup\n" << context;
  }
  if (r.status() == Result::OK) {
    // Only controls (and attacks that had no effect) are OK: the evaluation must be complete.
    EXPECT_EQ(v.exit_code, 0);
    EXPECT_EQ(r.correctness().trials_passed(), 2);
    EXPECT_TRUE(r.has_speedup());
  }
}

#define RT(name, ...) \
  TEST(RedTeam, name) { Expect(#name, __VA_ARGS__); }
// Attacks the judge misses today (kernels/testdata/redteam/README.md,
// "Pending"): the verdict listed is the one the fixed judge must give, so
// these fail until the judge is fixed. Run them alone with
// --gtest_filter='RedTeamPending.*'.
// Pending on 2026-12-04 16:20: RedTeamPending.oom_adj_reset_blame (an accepted
// residual risk; skipped unless PKFORGE_REDTEAM_PENDING=1).
#define RT_PENDING(name, ...) \
  TEST(RedTeamPending, name) { Expect(#name, __VA_ARGS__); }

// A cgroup of its own under this process's (cgroup v1 `controller`'s
// hierarchy, or v2) whose `v1_file` / `v2_file` limit is `value`; "" when it
// cannot be made (the test is skipped then).
inline std::string LimitedCgroup(const std::string& name, const std::string& controller,
                                 const std::string& v1_file, const std::string& v2_file,
                                 int64_t value) {
  std::string v1, v2;
  std::istringstream in(ReadFile("/proc/self/cgroup"));
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ctl = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (ctl == controller) v1 = "/sys/fs/cgroup/" + controller + path;
    if (ctl.empty() && line.rfind("0::", 0) == 0) v2 = "/sys/fs/cgroup" + path;
  }
  for (const auto& [base, limit] : {std::pair{v1, v1_file}, std::pair{v2, v2_file}}) {
    if (base.empty()) continue;
    const std::string dir = fmt::format("{}/{}_{}", base, name, getpid());
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) continue;
    std::ofstream f(dir + "/" + limit);
    f << value;
    f.close();
    if (f.good() && ReadFile(dir + "/" + limit).find(std::to_string(value)) == 0) return dir;
    rmdir(dir.c_str());
  }
  return "";
}
// Removes a cgroup made above once its processes are gone (up to 3 s).
inline void RemoveCgroup(const std::string& cg) {
  for (int i = 0; i < 300 && rmdir(cg.c_str()) != 0 && errno == EBUSY; ++i) usleep(10000);
}
// Removes the System V segments sysv_shm_oom_blame recorded (in each of its
// log directories' `shmid`), whatever the verdict.
inline void RemoveRecordedShmSegments() {
  const std::string tmp = ::testing::TempDir();
  if (DIR* d = opendir(tmp.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind("redteam_sysv_shm_oom_blame_", 0) != 0) continue;
      std::istringstream ids(ReadFile(tmp + "/" + n + "/shmid"));
      for (int id; ids >> id;) shmctl(id, IPC_RMID, nullptr);
    }
    closedir(d);
  }
}
// A memory cgroup limited to `bytes` ("" when it cannot be made: not root,
// no controller).
inline std::string MemoryCgroup(const std::string& name, int64_t bytes) {
  return LimitedCgroup(name, "memory", "memory.limit_in_bytes", "memory.max", bytes);
}

}  // namespace pkforge::kernels::redteam
