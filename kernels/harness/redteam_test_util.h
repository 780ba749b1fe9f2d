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

// Batch look-ahead (round 3 findings 1 and 2): every input set of a timed
// batch exists before the batch, and the judge sees outputs only before the
// batch and after it. Fused: the first call computes every call of the batch
// with one synchronization; deferred: every call but the last returns with
// its outputs unwritten. Attacks still pending use HonestSpeedup: the fixed
// judge must not report OK above 1.5x control_naive's speedup (same test).
// control_naive is the reference's own algorithm: its true speedup is 1, and
// a reading below 1 is load on the host (seen under ctest -j2: 0.62x, which
// bounded storm_blame_freeze, the naive algorithm with its storm refused, at
// 0.93x and failed it at 1.015x). Never below 1.
inline double HonestSpeedup() {
  Result r;
  Expect("control_naive", {kOk}, "", 10, "", 0, false, &r);
  return r.status() == Result::OK ? std::max(1.0, r.speedup()) : 1.0;
}

// Caught since 93d7640 by batch_progress (3 of 3 probes "behind": 0% of the
// calls done at 40-85% of the batch's time; round 5, 3/3 runs each, OK 9-14x
// before), and since the drip batches by batch_drip too (a call that returns
// before its outputs are written, in a batch where it cannot see a later
// call's inputs; a whole-batch fuser computes the batch from the decoys
// there: its outputs are wrong, timed_output_reverify). batch_consistency
// may fire first (it only flags on the host).
inline const Accept kProgressCheat = Cheat(
    {"batch_progress", "batch_consistency", "batch_drip", "timed_output_reverify"});

// Whether neither batch_progress nor batch_drip had a conclusive finding:
// every stop fell outside the batch, or the candidate was starved by other
// processes (ctest -j2 on a 2-core host). The judge then, rightly, has none.
inline bool NoConclusiveProbe(const Result& r) {
  for (const auto& c : r.cheat_checks()) {
    const std::string& d = c.detail();
    if (c.check() == "batch_progress" &&
        (d.find("(behind") != std::string::npos || d.find("(ahead") != std::string::npos ||
         d.find("(consistent") != std::string::npos))
      return false;
    if (c.check() == "batch_drip" &&
        (d.find("(slow)") != std::string::npos || d.find("(consistent)") != std::string::npos))
      return false;
  }
  return true;
}

// A whole-batch amortizer: CHEAT_DETECTED; an OK is tolerated only below 1x
// (no gain) or when no probe was conclusive (load), and then the launch is
// repeated (3 at most).
// `timeout_ok`: a chunked look-ahead whose ranks pick their chunks from
// what they see may disagree on a drip batch that releases two calls ahead
// (the lead's kDripLead = 2, round 6): their own barriers deadlock, TIMEOUT,
// which is no forged speedup either.
inline void ExpectProgressCheat(const std::string& name, bool timeout_ok = false) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    Result r;
    std::vector<Accept> accept{kProgressCheat, kOk};
    if (timeout_ok) accept.push_back(kTimeout);
    Expect(name, accept, "", 10, "", 0, false, &r);
    if (r.status() != Result::OK) return;
    // Slower than the reference itself: the launch forged no gain (at
    // f195737, probe_window_dodge OK at 0.09x and 0.10x in 2 of 5 local
    // launches and once on CI: its honest per-call epoch, three ranks
    // spinning on one pinned CPU, ~1 ms a call).
    if (r.speedup() < 1.0) return;
    bool inconclusive = NoConclusiveProbe(r);
    EXPECT_TRUE(inconclusive) << name << " got OK with conclusive progress probes (speedup "
                              << r.speedup() << ")";
    if (!inconclusive) return;
  }
  ADD_FAILURE() << name << ": 3 launches without one conclusive progress probe";
}

// ---- round 13 (helper-redteam13): the schedule of timing_schedule.h -----------------------------
// helper-notes/redteam-findings.md "ROUND 13". Against the lead's working
// tree (each long batch after the first sample a probe with a secret chance,
// 0-2 secret extra samples, the extension while probes are unsettled, the
// 75th percentile when batch checks flag). Generic command, 2-core host,
// each attack alternated with control_flag_epoch (honest OK 4.6-9.7x; it
// was CHEAT_DETECTED batch_progress once in 190 launches, 3 of 4 probes
// behind). Round 12's counting attacks still win: probe_count_fuse OK 37 of
// 48 (15 at 11.3-19.5x), probe_gap_fuse OK 32 of 48 (14 at 11.4-18.7x),
// CHEAT_DETECTED 11 and 16 of 48 (most beside another build); what wins is
// their chunks of 32, which never needed the count (r13_always_k32).
// OK is accepted below 1.5x control_flag_epoch's speedup in the same test
// (at least 9x, as round 12's); any conviction passes.
inline void R13ExpectUnderHonestEpoch(const std::string& name, int launches) {
  Result r;
  Expect("control_flag_epoch", {kOk, Cheat({"batch_drip"})}, "", 10, "", 0, false, &r);
  const double honest = r.status() == Result::OK ? r.speedup() : 5.0;
  for (int i = 0; i < launches; ++i)
    Expect(name, {kCheatAny, kOk}, "", 10, "", std::max(1.5 * honest, 9.0));
}

// A candidate submitted as source to a real pkforge-executor (host only,
// one slot, a token of its own) and judged with `pkforge eval`: the path an
// API client takes. `name`: testdata/redteam/<name>.cc; `flags`: more
// `pkforge eval` flags. `skipped` says what is missing when the executor or
// the CLI was not built.
struct ExecutorEval {
  std::string skipped;
  bool started = false;
  std::string executor_stderr;
  testing::Captured eval;
};
inline ExecutorEval EvalThroughExecutor(const std::string& name, const std::string& flags) {
  ExecutorEval e;
  const std::string worker = PKF_WORKER;
  const std::string bin = worker.substr(0, worker.rfind('/'));
  std::string source = __FILE__;
  source = source.substr(0, source.rfind("harness/")) + "testdata/redteam/" + name + ".cc";
  for (const std::string& f : {bin + "/pkforge-executor", bin + "/pkforge", source})
    if (access(f.c_str(), R_OK) != 0) {
      e.skipped = f + " is missing";
      return e;
    }
  const std::string dir = NewDir(name);
  { std::ofstream(dir + "/token") << name << "-token-0123456789\n"; }
  chmod((dir + "/token").c_str(), 0600);
  if (std::system(fmt::format(
          "{0}/pkforge-executor --listen 127.0.0.1:0 --data-dir {1}/data --gpus none "
          "--nvcc none --no-measure --host-slots 1 --compile-workers 1 --token-file "
          "{1}/token --worker {2} >{1}/exec.out 2>{1}/exec.err & echo $! >{1}/exec.pid",
          bin, dir, worker)
                      .c_str()) != 0)
    return e;
  const int pid = std::atoi(ReadFile(dir + "/exec.pid").c_str());
  std::string address;
  for (int i = 0; i < 200 && address.empty(); ++i) {
    const std::string out = ReadFile(dir + "/exec.out");
    const size_t at = out.find("listening on ");
    if (at != std::string::npos && out.find('\n', at) != std::string::npos)
      address = out.substr(at + 13, out.find('\n', at) - at - 13);
    else
      usleep(100'000);
  }
  if (!address.empty())
    e.eval = testing::RunCapture(fmt::format(
        "timeout -k 5 120 {}/pkforge eval --executor {} --token-file {}/token --problem allreduce "
        "--world-size 3 --dtype f32 --size tiny --quiet {} {} 2>{}/eval.err",
        bin, address, dir, flags, source, dir));
  if (pid > 0) {
    kill(pid, SIGTERM);
    for (int i = 0; i < 100 && kill(pid, 0) == 0; ++i) usleep(100'000);
    if (kill(pid, 0) == 0) kill(pid, SIGKILL);
  }
  e.started = !address.empty();
  e.executor_stderr = ReadFile(dir + "/exec.err");
  return e;
}

}  // namespace pkforge::kernels::redteam
