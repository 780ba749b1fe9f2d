// The red-team battery, round 18 (redteam_test.cc has the scheme): bypasses of
// round 17's fixes (command bits the kernel ignores) and the executor path
// (compile slots, the compile sandbox).
#include <dirent.h>
#include <stdlib.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include <cstdio>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "gtest/gtest.h"
#include "kernels/harness/launch_test_util.h"
#include "kernels/harness/problem.h"
#include "kernels/harness/protocol.h"
#include "kernels/harness/redteam_test_util.h"

namespace pkforge::kernels {
// The battery's vocabulary (Expect, Accept, RT, cgroups), in every block below.
using namespace redteam;  // NOLINT(build/namespaces)
}  // namespace pkforge::kernels

// ---------------------------------------------------------------------------
// Round 18 (helper-redteam18, session 15, against 04b821c): bypasses of the
// round-17 containment fixes, and the path real clients take (a real
// pkforge-executor compiling candidate source).
#include <fcntl.h>
#include <linux/sockios.h>
#include <sys/wait.h>
#include <signal.h>
#include <sys/syscall.h>

#include "kernels/harness/containment.h"

namespace pkforge::kernels {
namespace {

// Round 18: row 2's fcntl/ioctl refusals compare the command as 64 bits
// (containment.cc LoadCandidateSeccompFilter: SCMP_CMP_EQ on argument 1),
// but fcntl's and ioctl's command is `unsigned int` in the kernel: with the
// upper 32 bits set the filter lets it through and the kernel runs
// F_SETOWN / F_SETSIG / FIOSETOWN / TIOCSTI all the same.
// r18_fcntl_owner_hi (host ranks, bare launch as root): plain F_SETOWN on a
// reference rank EPERM, (1<<32)|F_SETOWN "ok" and F_GETOWN names the
// reference, (1<<32)|F_SETSIG SIGSTOP "ok", 3 of 3; the SIGIO itself is not
// delivered (reference state S: the ranks' uid 65534 against the
// references' root, and Landlock ABI 7's signal scope), WRONG_OUTPUT 3 of 3.
TEST(RedTeam, r18_fcntl_owner_hi) {
  for (int i = 0; i < 2; ++i) Expect("r18_fcntl_owner_hi", {kWrong});
}

// The same bypass where nothing else stands behind the filter: a cuda
// candidate rank (HardenCandidateProcess(drop_root=false,
// confine_writes=false, ...): no Landlock, no uid drop; in the executor's
// sandbox every process has one uid, in a bare root launch all are root) or
// a host rank on a kernel with Landlock ABI < 6 (Ubuntu 24.04's 6.8: ABI 4)
// inside the executor's sandbox. A process of the test's uid loads exactly
// the cuda candidate rank's hardening, then aims a SIGIO turned into
// SIGSTOP at a sibling process of the same uid (standing for a reference
// rank or the judge). 17:20 UTC: kill() EPERM, the (1<<32)|F_SETOWN route
// stopped the sibling, 3 of 3. Expected once fixed (argument 1 compared
// under the mask 0xffffffff, as sandbox/seccomp_filter.cc does): the
// sibling keeps running.
int R18SiblingStoppedThroughSigio(bool hi_bits, std::string* log) {
  const pid_t victim = fork();
  if (victim == 0) {
    for (;;) pause();
  }
  int report[2];
  if (victim < 0 || pipe(report) != 0) return -1;
  const pid_t attacker = fork();
  if (attacker == 0) {
    close(report[0]);
    auto say = [&](const std::string& s) {
      const ssize_t w = write(report[1], s.data(), s.size());
      (void)w;
    };
    if (auto st = HardenCandidateProcess(/*drop_root=*/false, /*confine_writes=*/false,
                                         /*forbid_timers=*/false, /*forbid_processes=*/false);
        !st.ok()) {
      say("harden: " + std::string(st.message()) + "\n");
      _exit(3);
    }
    say(fmt::format("kill(victim, SIGSTOP): {}\n", kill(victim, SIGSTOP) == 0 ? "ok" : strerror(errno)));
    const unsigned long long hi = hi_bits ? 1ULL << 32 : 0;
    int p[2];
    if (pipe(p) != 0) _exit(4);
    const long own = syscall(SYS_fcntl, p[0], hi | F_SETOWN, victim);
    say(fmt::format("fcntl({}F_SETOWN): {}\n", hi ? "(1<<32)|" : "", own == 0 ? "ok" : strerror(errno)));
    const long sig = syscall(SYS_fcntl, p[0], hi | F_SETSIG, SIGSTOP);
    say(fmt::format("fcntl({}F_SETSIG, SIGSTOP): {}\n", hi ? "(1<<32)|" : "", sig == 0 ? "ok" : strerror(errno)));
    fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK);
    const ssize_t w = write(p[1], "x", 1);
    (void)w;
    usleep(20'000);
    _exit(0);
  }
  close(report[1]);
  std::string got;
  char buf[512];
  for (ssize_t n; (n = read(report[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  close(report[0]);
  waitpid(attacker, nullptr, 0);
  usleep(20'000);
  std::string stat = ReadFile(fmt::format("/proc/{}/stat", victim));
  const size_t paren = stat.rfind(')');
  const bool stopped = paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'T';
  kill(victim, SIGKILL);
  waitpid(victim, nullptr, 0);
  *log = got;
  return stopped ? 1 : 0;
}

TEST(RedTeam, r18_fcntl_owner_filter_refuses_plain_command) {
  std::string log;
  EXPECT_EQ(R18SiblingStoppedThroughSigio(false, &log), 0) << log;
}

// Fixed by c86b88e (fcntl and ioctl commands compared under 0xffffffff):
// sibling running 3 of 3 (17:27 UTC): regular.
TEST(RedTeam, r18_fcntl_owner_hi_filter_only) {
  for (int i = 0; i < 3; ++i) {
    std::string log;
    const int stopped = R18SiblingStoppedThroughSigio(true, &log);
    std::printf("REDTEAM r18_fcntl_owner_hi_filter_only: sibling %s\n%s",
                stopped == 1 ? "STOPPED" : "running", log.c_str());
    EXPECT_EQ(stopped, 0) << log;
  }
}

}  // namespace
}  // namespace pkforge::kernels

namespace pkforge::kernels {
namespace {

// Round 18, the executor path: head-of-line blocking by the compile step.
// executor/pipeline.cc:515 takes one of compile_workers slots BEFORE the
// compiler looks in its cache, and holds it for the whole compile; a
// request that joins another's identical compile (compiler.cc Compile,
// single-flight) holds its slot while it waits. r18_compile_burn's compile
// runs 24 constant expressions just under g++'s ops limit: it burns one CPU
// until the compile timeout (120 s by default), and a timed-out compile is
// not cached, so it burns again on every request. 16:57 and 16:59 UTC,
// --compile-workers 2 (this VM's default: nproc), --host-slots 1: two burn
// requests (the same source twice: one cc1plus and one joiner; then two
// variants), then the honest r18_control_epoch_exec (a cache hit): it sat
// 96 s with nothing to show until the client gave up (2 of 2), the next one
// waited 16 s for the burn to time out ("compile 0 hit, queue 0, run 248"
// of 16391 ms: the wait is reported nowhere); afterwards OK 8.0-8.6x as
// before (8.2-8.5x). Here with --compile-workers 1 and a 20 s compile
// limit (config file): one burn, then the victim. Expected once fixed
// (cache lookups and joins outside the slots; a client's concurrent
// compiles bounded): the victim done within a few seconds.
struct R18Executor {
  std::string dir, address, skipped;
  int pid = -1;
  ~R18Executor() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      for (int i = 0; i < 100 && kill(pid, 0) == 0; ++i) usleep(100'000);
      if (kill(pid, 0) == 0) kill(pid, SIGKILL);
      waitpid(pid, nullptr, WNOHANG);
    }
  }
  std::string Bin() const {
    const std::string worker = PKF_WORKER;
    return worker.substr(0, worker.rfind('/'));
  }
  static std::string Source(const std::string& name, const std::string& ext = ".cc") {
    std::string s = __FILE__;
    return s.substr(0, s.rfind("harness/")) + "testdata/redteam/" + name + ext;
  }
  bool Start(const std::string& name, const std::string& config_json, const std::string& extra) {
    for (const std::string& f : {Bin() + "/pkforge-executor", Bin() + "/pkforge"})
      if (access(f.c_str(), X_OK) != 0) {
        skipped = f + " is missing";
        return false;
      }
    dir = NewDir(name);
    { std::ofstream(dir + "/token") << name << "-token-0123456789\n"; }
    chmod((dir + "/token").c_str(), 0600);
    { std::ofstream(dir + "/config.json") << config_json; }
    if (std::system(fmt::format(
            "{0}/pkforge-executor --listen 127.0.0.1:0 --data-dir {1}/data --gpus none "
            "--nvcc none --no-measure --token-file {1}/token --worker {2} --config "
            "{1}/config.json {3} >{1}/exec.out 2>{1}/exec.err & echo $! >{1}/exec.pid",
            Bin(), dir, PKF_WORKER, extra)
                        .c_str()) != 0)
      return false;
    pid = std::atoi(ReadFile(dir + "/exec.pid").c_str());
    for (int i = 0; i < 200 && address.empty(); ++i) {
      const std::string out = ReadFile(dir + "/exec.out");
      const size_t at = out.find("listening on ");
      if (at != std::string::npos && out.find('\n', at) != std::string::npos)
        address = out.substr(at + 13, out.find('\n', at) - at - 13);
      else
        usleep(100'000);
    }
    return !address.empty();
  }
  std::string EvalCommand(const std::string& source, const std::string& out) const {
    return fmt::format(
        "timeout -k 5 150 {}/pkforge eval --executor {} --token-file {}/token --problem allreduce "
        "--world-size 3 --dtype f32 --size tiny --quiet --json {} >{} 2>&1",
        Bin(), address, dir, source, out);
  }
};

// Fixed (the compiler takes a slot only to run the compiler: a cache hit
// or a joiner never waits for one): regular. Behaviour, not a time limit:
// the cache hit's result must be back while the burn still compiles (its
// result only comes at its 10 s compile limit).
TEST(RedTeam, r18_compile_burn_blocks_others) {
  R18Executor ex;
  if (!ex.Start("r18_compile_burn", "{\"compile_timeout_ms\": 10000}",
                "--host-slots 1 --compile-workers 1")) {
    if (!ex.skipped.empty()) GTEST_SKIP() << ex.skipped;
    FAIL() << "the executor did not start:\n" << ReadFile(ex.dir + "/exec.err");
  }
  const std::string victim = R18Executor::Source("r18_control_epoch_exec");
  // Once alone: compiled and cached.
  ASSERT_EQ(std::system(ex.EvalCommand(victim, ex.dir + "/warm.json").c_str()), 0)
      << ReadFile(ex.dir + "/warm.json");
  // Kept as .src (the build would compile it, for minutes): submitted as a .cc.
  const std::string burn = ex.dir + "/r18_compile_burn.cc";
  { std::ofstream(burn) << ReadFile(R18Executor::Source("r18_compile_burn", ".src")); }
  ASSERT_EQ(std::system((ex.EvalCommand(burn,
                                        ex.dir + "/burn.json") + " &").c_str()), 0);
  usleep(2'000'000);
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = std::system(ex.EvalCommand(victim, ex.dir + "/victim.json").c_str());
  const double waited_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string out = ReadFile(ex.dir + "/victim.json");
  const bool burn_still_compiling = ReadFile(ex.dir + "/burn.json").empty();
  std::printf("REDTEAM r18_compile_burn_blocks_others: the honest cache hit took %.1f s (rc %d), "
              "%s, the burn %s\n",
              waited_s, rc, out.find("\"OK\"") != std::string::npos ? "OK" : "not OK",
              burn_still_compiling ? "still compiling" : "already done");
  for (int i = 0; i < 250 && ReadFile(ex.dir + "/burn.json").empty(); ++i) usleep(100'000);
  EXPECT_NE(out.find("\"status\": \"OK\""), std::string::npos) << out;
  EXPECT_TRUE(burn_still_compiling) << "an evaluation whose compile is a cache hit waited for "
                                       "another request's compile (" << waited_s << " s)";
  EXPECT_NE(ReadFile(ex.dir + "/burn.json").find("TIMEOUT"), std::string::npos)
      << ReadFile(ex.dir + "/burn.json");
}

}  // namespace
}  // namespace pkforge::kernels

namespace pkforge::kernels {
namespace {

// Round 18, the executor path, what holds: the compile sandbox's view.
// A source asks __has_include (no error when absent) about the executor's
// token file, its data dir (the executor's lock, the compile cache), the
// repository, /root, /etc/hostname and /sys, and names each one it sees in
// a #warning (the compile output comes back to the client). 16:57 UTC: none
// seen (only /proc/sysvipc/shm, /proc/1/environ of the sandbox's own init,
// /dev/pts/ptmx and its own candidate.cc); an #include of a /proc file reads
// nothing (size 0). Regular: none may appear.
TEST(RedTeam, r18_compile_peek) {
  R18Executor ex;
  if (!ex.Start("r18_compile_peek", "{}", "--host-slots 1 --compile-workers 1")) {
    if (!ex.skipped.empty()) GTEST_SKIP() << ex.skipped;
    FAIL() << "the executor did not start:\n" << ReadFile(ex.dir + "/exec.err");
  }
  std::string src;
  const std::vector<std::string> paths = {ex.dir + "/token", ex.dir + "/data/.executor.lock",
                                          ex.dir + "/data/compile-cache/.lock",
                                          R18Executor::Source("r18_compile_peek", ".cc"),
                                          std::string(__FILE__), "/root/.bashrc", "/etc/hostname",
                                          "/sys/kernel/notes"};
  for (const std::string& p : paths)
    src += fmt::format("#if __has_include(\"{0}\")\n#warning \"SEES {0}\"\n#endif\n", p);
  src += "#error done\n";
  const std::string file = ex.dir + "/r18_compile_peek.cc";
  { std::ofstream(file) << src; }
  std::system(ex.EvalCommand(file, ex.dir + "/peek.json").c_str());
  const std::string out = ReadFile(ex.dir + "/peek.json");
  std::printf("REDTEAM r18_compile_peek: %s\n",
              out.find("SEES") == std::string::npos ? "nothing seen" : "SEEN");
  EXPECT_NE(out.find("COMPILE_ERROR"), std::string::npos) << out;
  EXPECT_EQ(out.find("SEES /"), std::string::npos) << out;
}

// Round 18: the honest victim alone through a real executor. 16:57 UTC:
// OK 8.2-8.5x 3 of 3.
TEST(RedTeam, r18_control_epoch_exec) {
  const ExecutorEval e = EvalThroughExecutor("r18_control_epoch_exec", "--json");
  if (!e.skipped.empty()) GTEST_SKIP() << e.skipped;
  ASSERT_TRUE(e.started) << "the executor did not start:\n" << e.executor_stderr;
  EXPECT_NE(e.eval.output.find("\"status\": \"OK\""), std::string::npos) << e.eval.output;
}

}  // namespace
}  // namespace pkforge::kernels
