// The red-team battery, rounds 16 and 17 (redteam_test.cc has the scheme):
// containment outside the timing checks (terminals, metadata, sockets, keyrings,
// SysV IPC) and bypasses of those fixes.
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

// Round 16 (appended): what the terminal tests below need.
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>

namespace pkforge::kernels {
namespace {

// Round 16 (helper-redteam16, against e06553f): the controlling terminal.
// Runs `inner` (sh -c) as the leader of a new session whose controlling
// terminal is a fresh pseudo-terminal, as a person's shell runs a command
// they typed; drains the terminal's output until `inner` ends (at most
// `limit_s`). Returns what the terminal showed.
std::string RunOnATerminal(const std::string& inner, int limit_s) {
  const int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0) return "(no pseudo-terminal)";
  const std::string slave = ptsname(m);
  const pid_t pid = fork();
  if (pid == 0) {
    setsid();
    const int s = open(slave.c_str(), O_RDWR);  // the session's controlling terminal
    if (s < 0) _exit(126);
    ioctl(s, TIOCSCTTY, 0);
    dup2(s, 0);
    dup2(s, 1);
    dup2(s, 2);
    if (s > 2) close(s);
    execl("/bin/sh", "sh", "-c", inner.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string shown;
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    pollfd p{m, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      char buf[4096];
      const ssize_t n = read(m, buf, sizeof buf);
      if (n > 0 && shown.size() < (1u << 16)) shown.append(buf, static_cast<size_t>(n));
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(limit_s)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
  }
  close(m);
  return shown;
}

// Round 16: a bare launch typed at a terminal. The judge starts its ranks in
// a process group of their own but in the caller's session
// (rank_pool.cc StartRank: setpgid, no setsid), so a candidate rank can open
// /dev/tty read-only (Landlock handles only write rights, and not
// IOCTL_DEV) and ioctl(TIOCSTI) bytes into the terminal's input queue (the
// seccomp filter refuses FIOSETOWN and SIOCSPGRP only): the caller's shell
// runs them after the judge exits, outside every confinement, as the caller
// (root here: the ranks' drop to 65534 does not matter). The test's
// "terminal" runs the launch, then `timeout 10 sh` reading commands from the
// terminal as an interactive shell would (--foreground: in the terminal's
// foreground process group); the candidate (with the test's
// consent, inject.ok) types `echo ... > tty_injected; exit`.
// Measured 13:37-13:41 UTC (root launch, ranks at uid 65534): OK 3 of 3,
// the typed line ran as uid 0 each time (and as the launching user for a
// plain-user launch, by hand); see the README's
// round 16 table. Expected once fixed: WRONG_OUTPUT (no controlling terminal
// in a candidate rank) and no tty_injected file.
// Fixed (candidate ranks give up the controlling terminal, TIOCNOTTY: not a
// session of their own, which is a scheduling autogroup of their own; no
// terminal; TIOCSTI/TIOCLINUX refused by seccomp; Landlock IOCTL_DEV where
// the kernel has it): WRONG_OUTPUT, nothing typed (14:00 UTC). Behind
// PKFORGE_REDTEAM_PENDING for its 90 s terminal wait; the fast test of the
// rule is Harden.NothingCanBeTypedIntoATerminal.
TEST(RedTeamPending, r16_tty_inject) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 16, fixed (its terminal wait takes 90 s); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  const std::string log = NewDir("r16_tty_inject");
  { std::ofstream(log + "/inject.ok") << "the test's terminal runs only the test's shell\n"; }
  const std::string inner = fmt::format(
      "PKF_REDTEAM_DIR={0} timeout -k 5 60 {1} launch --problem allreduce --backend host "
      "--world-size 3 --dtype f32 --size tiny --trials 2 --warmup 1 --iters 6 --timeout 10 "
      "--json --candidate-writable {0} {2}/redteam_r16_tty_inject.so >{0}/result.json "
      "2>{0}/judge_stderr; timeout --foreground 10 sh",
      log, PKF_WORKER, PKF_CANDIDATES);
  const std::string shown = RunOnATerminal(inner, 90);
  const Verdict v = RunJudge(fmt::format("cat {}/result.json", log), log + "/cat_stderr");
  const std::string injected = ReadFile(log + "/tty_injected");
  std::printf("REDTEAM r16_tty_inject status=%s injected=%s\n",
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              injected.empty() ? "(nothing)" : injected.c_str());
  ASSERT_TRUE(v.parsed) << v.channel_error << "\nterminal:\n" << shown.substr(0, 2000);
  EXPECT_TRUE(injected.empty())
      << "the caller's shell ran a command the candidate typed into its terminal: " << injected
      << ReadFile(log + "/log");
  EXPECT_EQ(v.result.status(), Result::WRONG_OUTPUT)
      << "a candidate rank reached the caller's controlling terminal:\n"
      << ReadFile(log + "/log");
}

// Round 16: metadata of the user's files (Landlock has no right for chmod,
// chown, utimensat, setxattr). As r15_judge_binary_write: uid 65534 via
// setpriv on throwaway copies in a folder that uid owns (a battery run by a
// plain user). r16_metadata_write chmods, re-times and tags the worker copy
// and its own folder (restored), and with sabotage.ok leaves the sibling
// library (control_naive) at mode 0 and the worker a-x. Then the sibling is
// launched through a second, untouched worker copy. Expected once fixed:
// WRONG_OUTPUT, the modes unchanged, the sibling judged OK.
// Fixed (host ranks' seccomp refuses the chmod, chown, utime and xattr
// families): WRONG_OUTPUT, modes unchanged, the sibling OK (14:00 UTC).
TEST(RedTeam, r16_metadata_write) {
  const std::string root = NewDir("r16_metadata_write_tree");
  const std::string log = NewDir("r16_metadata_write");
  ASSERT_EQ(std::system(fmt::format("mkdir -p {0}/bin {0}/bin2 {0}/cand && cp {1} {0}/bin/ && cp "
                                    "{1} {0}/bin2/ && cp {2}/redteam_r16_metadata_write.so "
                                    "{2}/redteam_control_naive.so {0}/cand/",
                                    root, PKF_WORKER, PKF_CANDIDATES)
                            .c_str()),
            0);
  std::string as = "";
  if (geteuid() == 0) {
    ASSERT_EQ(std::system(fmt::format("chown -R 65534:65534 {}", root).c_str()), 0);
    as = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  }
  { std::ofstream(log + "/sabotage.ok") << "the tree under " << root << " is throwaway\n"; }
  setenv("PKF_REDTEAM_DIR", log.c_str(), 1);
  auto launch = [&](const std::string& bin, const std::string& cand) {
    return RunJudge(fmt::format("cd {0} && timeout -k 5 60 {1}{0}/{2}/pkforge-worker launch "
                                "--problem allreduce --backend host --world-size 3 --dtype f32 "
                                "--size tiny --trials 2 --warmup 1 --iters 6 --timeout 10 --json "
                                "--candidate-writable {4} {0}/cand/redteam_{3}.so",
                                root, as, bin, cand, log),
                    log + "/judge_stderr_" + bin);
  };
  struct stat w0{}, s0{};
  stat((root + "/bin/pkforge-worker").c_str(), &w0);
  stat((root + "/cand/redteam_control_naive.so").c_str(), &s0);
  const Verdict attack = launch("bin", "r16_metadata_write");
  struct stat w1{}, s1{};
  stat((root + "/bin/pkforge-worker").c_str(), &w1);
  stat((root + "/cand/redteam_control_naive.so").c_str(), &s1);
  const Verdict sibling = launch("bin2", "control_naive");
  const Verdict again = launch("bin", "control_naive");
  unsetenv("PKF_REDTEAM_DIR");
  std::printf("REDTEAM r16_metadata_write status=%s; worker mode %o -> %o, sibling mode %o -> %o; "
              "sibling after it: %s; the worker again: exit %d %s\n",
              attack.parsed ? Result::Status_Name(attack.result.status()).c_str() : "NO_RESULT",
              w0.st_mode & 07777, w1.st_mode & 07777, s0.st_mode & 07777, s1.st_mode & 07777,
              sibling.raw.substr(0, 300).c_str(), again.exit_code,
              again.stderr_text.substr(0, 200).c_str());
  std::system(fmt::format("chmod -R u+rwX {0}; rm -rf {0}", root).c_str());
  ASSERT_TRUE(attack.parsed) << attack.channel_error;
  EXPECT_EQ(attack.result.status(), Result::WRONG_OUTPUT)
      << "the candidate changed modes, times or attributes of the user's files:\n"
      << ReadFile(log + "/log");
  EXPECT_EQ(w1.st_mode & 07777, w0.st_mode & 07777) << "the worker's mode changed";
  EXPECT_EQ(s1.st_mode & 07777, s0.st_mode & 07777) << "the sibling library's mode changed";
  ASSERT_TRUE(sibling.parsed) << sibling.channel_error << " " << sibling.stderr_text;
  EXPECT_EQ(sibling.result.status(), Result::OK)
      << "the next candidate's evaluation was broken by the one before: " << sibling.raw;
}

// Round 16: the late stop made by an uninterruptible wait instead of a held
// CPU. r16_dstate_late_stop: whole-batch fusion (r13_late_stop_whole's)
// with a helper thread of rank 0 asleep in an O_DIRECT pread of the worker
// binary ('D') for ~1.1x each batch's span, so that the freeze, which waits
// for every thread to read 'T', takes hold late on every probe. Held: the
// probe's time is when the stop was SENT (rank_pool.cc CandPausedRound:
// stop_sent_at_ns), and the calls' threads stop at once; 13:38-13:39 UTC
// CHEAT_DETECTED batch_progress 4 of 4 (9.1-13.0x before the verdict,
// probes behind), control_flag_epoch OK 6.7-7.9x.
TEST(RedTeam, r16_dstate_late_stop) { R13ExpectUnderHonestEpoch("r16_dstate_late_stop", 3); }

// Round 16: fusion under the idle gate. kIdleExcuseLimit (1.5x) still
// excuses main_idle probes of a candidate up to 1.5x faster than the
// reference; with the leader parked (r15) every probe is main_idle, so a
// whole-batch fuser that sleeps each batch to ~1/1.4 of the reference's
// time (learned from its own naive warm-up batch) passes "not judged"
// without a flag. 13:39 UTC: r16_parked_leader_capped OK 1.26-1.44x (5
// launches, probes 100% done at 32-66%: "ahead" but excused), the
// _behind variant (outputs at the last call: "behind", excused) OK 1.28x
// 3 of 3, against control_naive (the same algorithm per call) OK
// 0.98-1.00x. Without the parked leader the "ahead" probes convict (only a
// candidate no faster than the reference, 1.0x, is merely flagged).
// Expected once fixed: not OK above 1.2x control_naive's speedup.
void R16ExpectUnderNaive(const std::string& name, int launches) {
  Result r;
  Expect("control_naive", {kOk}, "", 10, "", 0, false, &r);
  const double naive = r.status() == Result::OK ? r.speedup() : 1.0;
  for (int i = 0; i < launches; ++i) Expect(name, {kCheatAny, kOk}, "", 10, "", 1.2 * naive);
}
// After the fixes (14:10 UTC): "ahead" is judged whatever the main threads
// did, so _capped is CHEAT_DETECTED 3 of 3 (once OK 1.38x under a saturating
// build); _capped_behind stays under the 1.25x idle gate (OK 1.18-1.22x
// against control_naive 0.94x): the residual, a gain of at most ~25% over
// the same algorithm's honest calls (threat model row 37).
TEST(RedTeamPending, r16_parked_leader_capped) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 16 (OK 1.26-1.44x, not judged, against control_naive 1.00x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R16ExpectUnderNaive("r16_parked_leader_capped", 3);
}
TEST(RedTeamPending, r16_parked_leader_capped_behind) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 16 (OK 1.28x, not judged, against control_naive 1.00x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R16ExpectUnderNaive("r16_parked_leader_capped_behind", 3);
}

}  // namespace
}  // namespace pkforge::kernels

// Round 16 (appended): what the socket test below needs.
#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace pkforge::kernels {
namespace {

// Round 16: services outside the evaluation. A candidate rank may connect to
// any unix socket its uid may (Landlock has no right for connect, abstract
// names are not scoped, seccomp lets AF_UNIX through): in a plain user's
// bare launch that is the user's session bus (systemd --user runs any
// command as a transient unit), ssh-agent, X11. The test stands up a
// listener at a path outside the writable folders (mode 0777, as
// /run/user/<uid>/bus) and one at an abstract name; r16_unix_connect (rank 0)
// connects to each and sends a line. 13:43 UTC: OK 3 of 3, both heard it; see the README's round 16
// table. Expected once fixed: WRONG_OUTPUT and nothing heard.
// Fixed (host ranks get no socket(): EPERM; socketpair stays): WRONG_OUTPUT,
// neither service heard anything (14:00 UTC).
TEST(RedTeam, r16_unix_connect) {
  const std::string log = NewDir("r16_unix_connect");
  const std::string svc = NewDir("r16_unix_connect_svc");
  const std::string path = svc + "/sock";
  const std::string abstract = fmt::format("pkf-r16-svc-{}", getpid());
  auto listen_on = [](const std::string& name, bool abs) {
    const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    socklen_t len = sizeof a;
    if (abs) {
      std::snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "%s", name.c_str());
      len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    } else {
      std::snprintf(a.sun_path, sizeof a.sun_path, "%s", name.c_str());
    }
    if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(s, 8) != 0) return -1;
    if (!abs) chmod(name.c_str(), 0777);
    return s;
  };
  const int ls[2] = {listen_on(path, false), listen_on(abstract, true)};
  ASSERT_GE(ls[0], 0);
  ASSERT_GE(ls[1], 0);
  { std::ofstream(log + "/svc.path") << path << "\n" << abstract << "\n"; }
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<std::string> heard;
  std::thread server([&] {
    while (!stop) {
      pollfd p[2] = {{ls[0], POLLIN, 0}, {ls[1], POLLIN, 0}};
      if (poll(p, 2, 100) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if ((p[i].revents & POLLIN) == 0) continue;
        const int c = accept4(ls[i], nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        pollfd q{c, POLLIN, 0};
        char buf[256] = {0};
        const ssize_t n = poll(&q, 1, 1000) > 0 ? read(c, buf, sizeof buf - 1) : 0;
        close(c);
        std::lock_guard<std::mutex> g(mu);
        heard.push_back(fmt::format("{}: {}", i == 0 ? path : "@" + abstract,
                                    std::string(buf, n > 0 ? static_cast<size_t>(n) : 0)));
      }
    }
  });
  setenv("PKF_REDTEAM_DIR", log.c_str(), 1);
  const Verdict v = RunJudge(
      fmt::format("timeout -k 5 60 {} launch --problem allreduce --backend host --world-size 3 "
                  "--dtype f32 --size tiny --trials 2 --warmup 1 --iters 6 --timeout 10 --json "
                  "--candidate-writable {} {}/redteam_r16_unix_connect.so",
                  PKF_WORKER, log, PKF_CANDIDATES),
      log + "/judge_stderr");
  unsetenv("PKF_REDTEAM_DIR");
  usleep(300'000);
  stop = true;
  server.join();
  close(ls[0]);
  close(ls[1]);
  std::printf("REDTEAM r16_unix_connect status=%s heard=%s\n",
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              heard.empty() ? "(nothing)" : fmt::format("{}", fmt::join(heard, " | ")).c_str());
  ASSERT_TRUE(v.parsed) << v.channel_error;
  EXPECT_TRUE(heard.empty()) << "a candidate rank reached services outside the evaluation:\n"
                             << ReadFile(log + "/log");
  EXPECT_EQ(v.result.status(), Result::WRONG_OUTPUT) << ReadFile(log + "/log");
}

}  // namespace
}  // namespace pkforge::kernels

// Round 17 (appended, helper-redteam17): what the keyring, IPC, terminal and
// datagram tests below need.
#include <fcntl.h>
#include <linux/keyctl.h>
#include <poll.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <sys/wait.h>

namespace pkforge::kernels {
namespace {

std::string R17Launch(const std::string& name, const std::string& log) {
  return fmt::format(
      "timeout -k 5 60 {} launch --problem allreduce --backend host --world-size 3 --dtype f32 "
      "--size tiny --trials 2 --warmup 1 --iters 6 --timeout 10 --json --candidate-writable {} "
      "{}/redteam_{}.so",
      PKF_WORKER, log, PKF_CANDIDATES, name);
}

// Round 17: the caller's session keyring. Host ranks may use keyctl,
// add_key and request_key (no seccomp rule, no Landlock notion of keys); a
// rank inherits the session keyring of whoever ran the launch and possesses
// it, so possessor rights apply whatever its uid (65534 after a root
// launch's drop). The launch runs in a fresh session keyring holding a
// "user" key pkf-r17-secret (as `keyctl add user ... @s` or a login's
// pam_keyinit/kerberos/NFS keys would be); r17_keyring_read (rank 0) lists
// @s, reads every key, links pkf-r17-planted into @s, rewrites the secret's
// payload (add_key of the same description updates it) and adds
// pkf-r17-left-behind to its own user keyring, which outlives the launch.
// 16:20 UTC: OK (worked) 3 of 3, the secret read, planted and rewritten, the
// @u key still on the host afterwards. Expected once fixed: WRONG_OUTPUT,
// the secret intact, no key planted, none left behind.
// Fixed (886da92, fda1214: keyctl, add_key, request_key EPERM): WRONG_OUTPUT,
// the secret intact, nothing planted or left behind (16:27 UTC).
long R17KeyCtl(int op, unsigned long a, unsigned long b = 0, unsigned long c = 0,
               unsigned long d = 0) {
  return syscall(SYS_keyctl, op, a, b, c, d);
}
TEST(RedTeam, r17_keyring_read) {
  const std::string log = NewDir("r17_keyring_read");
  const std::string cmd = R17Launch("r17_keyring_read", log);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The caller's side: a session keyring of its own with a secret in it.
    R17KeyCtl(KEYCTL_JOIN_SESSION_KEYRING, reinterpret_cast<unsigned long>("pkf-r17-session"));
    const char secret[] = "redteam-keyring-secret";
    const long key = syscall(SYS_add_key, "user", "pkf-r17-secret", secret, sizeof secret - 1,
                             KEY_SPEC_SESSION_KEYRING);
    setenv("PKF_REDTEAM_DIR", log.c_str(), 1);
    const int st = std::system((cmd + " > " + log + "/result.json 2>" + log + "/judge_stderr").c_str());
    char payload[128] = {0};
    R17KeyCtl(KEYCTL_READ, static_cast<unsigned long>(key), reinterpret_cast<unsigned long>(payload),
              sizeof payload - 1);
    const long planted =
        R17KeyCtl(KEYCTL_SEARCH, static_cast<unsigned long>(KEY_SPEC_SESSION_KEYRING),
                  reinterpret_cast<unsigned long>("user"),
                  reinterpret_cast<unsigned long>("pkf-r17-planted"), 0);
    std::ofstream(log + "/caller_keys") << "launch status " << st << "\nsecret now: " << payload
                                        << "\nplanted in @s: " << (planted > 0 ? "yes" : "no")
                                        << "\n";
    _exit(0);
  }
  int st = 0;
  waitpid(child, &st, 0);
  // The ranks' own user keyring (uid 65534 after a root launch's drop; the
  // caller's own otherwise): a key there outlives the evaluation.
  bool left_behind = false;
  {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t probe = fork();
    if (probe == 0) {
      if (geteuid() == 0 && (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0))
        _exit(2);
      const long k = R17KeyCtl(KEYCTL_SEARCH, static_cast<unsigned long>(KEY_SPEC_USER_KEYRING),
                               reinterpret_cast<unsigned long>("user"),
                               reinterpret_cast<unsigned long>("pkf-r17-left-behind"), 0);
      const char c = k > 0 ? 'y' : 'n';
      if (k > 0) R17KeyCtl(KEYCTL_UNLINK, static_cast<unsigned long>(k),
                           static_cast<unsigned long>(KEY_SPEC_USER_KEYRING));
      if (write(fds[1], &c, 1) != 1) _exit(3);
      _exit(0);
    }
    close(fds[1]);
    char c = 'n';
    if (read(fds[0], &c, 1) != 1) c = '?';
    close(fds[0]);
    waitpid(probe, nullptr, 0);
    left_behind = c == 'y';
  }
  const Verdict v = RunJudge(fmt::format("cat {}/result.json", log), log + "/cat_stderr");
  const std::string caller = ReadFile(log + "/caller_keys");
  std::printf("REDTEAM r17_keyring_read status=%s left_behind=%s %s\n",
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              left_behind ? "yes" : "no", caller.c_str());
  ASSERT_TRUE(v.parsed) << v.channel_error << "\n" << ReadFile(log + "/judge_stderr");
  EXPECT_EQ(v.result.status(), Result::WRONG_OUTPUT)
      << "a candidate rank read or wrote the caller's keyring:\n" << ReadFile(log + "/log");
  EXPECT_NE(caller.find("secret now: redteam-keyring-secret"), std::string::npos)
      << "the caller's key was rewritten by the candidate: " << caller;
  EXPECT_NE(caller.find("planted in @s: no"), std::string::npos)
      << "the candidate linked a key into the caller's session keyring: " << caller;
  EXPECT_FALSE(left_behind) << "a key the candidate added outlived the evaluation";
}

// Round 17: System V IPC and POSIX queues left on the host. A bare launch
// shares the host's IPC namespace and nothing refuses shmget/msgget/semget
// (mq_open is refused: Landlock's MAKE_REG on the mqueue mount).
// r17_ipc_leftover (rank 0) leaves a 64 MiB segment (touched: the pages are
// held by nobody's process), a message queue with a message and a semaphore
// set under key 0x706b6617. 16:22 UTC: OK (worked) 3 of 3, all three still
// on the host after the launch (ipcs: owner nobody). Expected once fixed:
// WRONG_OUTPUT and nothing left.
// Fixed (886da92: SysV IPC and mq_* EPERM on host ranks): WRONG_OUTPUT,
// nothing left (16:27 UTC).
TEST(RedTeam, r17_ipc_leftover) {
  const key_t key = 0x706b6617;
  Expect("r17_ipc_leftover", {kWrong});
  const int shm = shmget(key, 0, 0);
  const int msq = msgget(key, 0);
  const int sem = semget(key, 0, 0);
  std::printf("REDTEAM r17_ipc_leftover left behind: shm %s, msg %s, sem %s\n",
              shm >= 0 ? "yes" : "no", msq >= 0 ? "yes" : "no", sem >= 0 ? "yes" : "no");
  if (shm >= 0) shmctl(shm, IPC_RMID, nullptr);
  if (msq >= 0) msgctl(msq, IPC_RMID, nullptr);
  if (sem >= 0) semctl(sem, 0, IPC_RMID);
  EXPECT_LT(shm, 0) << "a SysV shared memory segment of the candidate outlived the evaluation";
  EXPECT_LT(msq, 0) << "a SysV message queue of the candidate outlived the evaluation";
  EXPECT_LT(sem, 0) << "a SysV semaphore set of the candidate outlived the evaluation";
}

// Round 17: the user's terminals, read. Round 16 took the controlling
// terminal away (TIOCNOTTY) and refuses TIOCSTI and device ioctls, but a
// rank may still open any terminal its uid owns by path, read-only
// (Landlock handles only writes), and, the terminal not being its
// controlling one, read() takes the bytes out of its input queue. The test
// opens a pseudo-terminal owned by the ranks' uid (65534 in a root launch,
// as the user's own /dev/pts/N are in a plain user's launch) and types a
// line ahead; r17_pts_read (rank 0) reads every terminal it can open.
// 16:24 UTC: OK (worked) 3 of 3, the line read by uid 65534 and gone for
// the terminal's own reader. Expected once fixed: WRONG_OUTPUT, the line
// still there.
// Fixed (886da92: Landlock handles READ_FILE, /dev readable only for the
// null-like and random devices and /dev/shm): WRONG_OUTPUT, the line still
// there (16:27 UTC).
TEST(RedTeam, r17_pts_read) {
  const std::string log = NewDir("r17_pts_read");
  const int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(m, 0);
  ASSERT_EQ(grantpt(m), 0);
  ASSERT_EQ(unlockpt(m), 0);
  const std::string slave = ptsname(m);
  if (geteuid() == 0) {
    ASSERT_EQ(chown(slave.c_str(), 65534, 65534), 0);
  }
  const int s = open(slave.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(s, 0);
  const std::string typed = "pkf-r17-typed-password\n";
  ASSERT_EQ(write(m, typed.data(), typed.size()), static_cast<ssize_t>(typed.size()));
  usleep(10'000);
  setenv("PKF_REDTEAM_DIR", log.c_str(), 1);
  const Verdict v = RunJudge(R17Launch("r17_pts_read", log), log + "/judge_stderr");
  unsetenv("PKF_REDTEAM_DIR");
  char buf[128] = {0};
  const ssize_t n = read(s, buf, sizeof buf - 1);
  close(s);
  close(m);
  std::printf("REDTEAM r17_pts_read status=%s; the terminal's reader then got %zd bytes\n",
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT", n);
  ASSERT_TRUE(v.parsed) << v.channel_error;
  EXPECT_EQ(v.result.status(), Result::WRONG_OUTPUT)
      << "a candidate rank read the user's terminal:\n" << ReadFile(log + "/log");
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), typed)
      << "the typed line was taken from the terminal before its reader saw it";
}

// Round 17: round 16's socket fix bypassed through socketpair(AF_UNIX,
// SOCK_DGRAM): a datagram socket of a pair still takes a destination
// (sendto, or connect to re-target it) by path or abstract name, so a rank
// reaches every datagram service (journal/syslog, systemd's notify socket)
// and may bind an abstract name. The test stands up a datagram listener at
// a path outside the writable folders (0777) and one at an abstract name;
// r17_dgram_sendto (rank 0) sends a line to each from a socketpair socket.
// 16:26 UTC: OK (worked) 3 of 3, both heard "from uid 65534" (socket()
// itself EPERM). Expected once fixed: WRONG_OUTPUT and nothing heard.
// Fixed (886da92: socketpair of type SOCK_DGRAM EPERM, Landlock abstract
// scope): WRONG_OUTPUT, nothing heard (16:27 UTC); but see r17_dgram_raw.
void R17ExpectNoDatagram(const std::string& name) {
  const std::string log = NewDir(name);
  const std::string svc = NewDir(name + "_svc");
  const std::string path = svc + "/sock";
  const std::string abstract = fmt::format("pkf-r17-svc-{}", getpid());
  auto bind_dgram = [](const std::string& where, bool abs) {
    const int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    socklen_t len = sizeof a;
    if (abs) {
      std::snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "%s", where.c_str());
      len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + where.size());
    } else {
      std::snprintf(a.sun_path, sizeof a.sun_path, "%s", where.c_str());
    }
    if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&a), len) != 0) return -1;
    if (!abs) chmod(where.c_str(), 0777);
    return s;
  };
  const int ls[2] = {bind_dgram(path, false), bind_dgram(abstract, true)};
  ASSERT_GE(ls[0], 0);
  ASSERT_GE(ls[1], 0);
  { std::ofstream(log + "/svc.path") << path << "\n" << abstract << "\n"; }
  setenv("PKF_REDTEAM_DIR", log.c_str(), 1);
  const Verdict v = RunJudge(R17Launch(name, log), log + "/judge_stderr");
  unsetenv("PKF_REDTEAM_DIR");
  std::vector<std::string> heard, heard_not;
  for (int i = 0; i < 2; ++i) {
    char buf[256] = {0};
    ssize_t n = recv(ls[i], buf, sizeof buf - 1, 0);
    while (n > 0 && buf[n - 1] == '\n') buf[--n] = '\0';
    if (n > 0)
      heard.push_back(fmt::format("{}: {}", i == 0 ? path : "@" + abstract, buf));
    else
      heard_not.push_back(fmt::format("{}: {}", i == 0 ? path : "@" + abstract, strerror(errno)));
    close(ls[i]);
  }
  std::printf("REDTEAM %s status=%s heard=%s; silent: %s\n", name.c_str(),
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              heard.empty() ? "(nothing)" : fmt::format("{}", fmt::join(heard, " | ")).c_str(),
              fmt::format("{}", fmt::join(heard_not, " | ")).c_str());
  ASSERT_TRUE(v.parsed) << v.channel_error;
  EXPECT_TRUE(heard.empty()) << "a candidate rank reached datagram services outside the "
                                "evaluation:\n"
                             << ReadFile(log + "/log");
  EXPECT_EQ(v.result.status(), Result::WRONG_OUTPUT) << ReadFile(log + "/log");
}
TEST(RedTeam, r17_dgram_sendto) { R17ExpectNoDatagram("r17_dgram_sendto"); }

// Round 17, honest but unusual: threads started and joined inside every
// call (r17_control_thread_per_call: the call's work on a fresh std::thread
// and a second empty one; a joined thread may still be in do_exit, listed
// in /proc/<pid>/task, when the call returns), and a candidate that makes
// itself non-dumpable in pkf_setup (r17_control_nondumpable: the judge's
// ptrace-guarded /proc reads of it fail where the judge has no
// CAP_SYS_PTRACE: a plain user's launch, here as uid 65534). 16:30 UTC:
// thread_per_call OK 0.21-0.22x 3 of 3 (each call pays two thread
// creations), nondumpable OK 0.98-1.01x 5 of 5 (2 root, 3 as uid 65534),
// against control_naive 1.00x.
TEST(RedTeam, r17_control_thread_per_call) {
  for (int i = 0; i < 2; ++i) Expect("r17_control_thread_per_call", {kOk});
}
TEST(RedTeam, r17_control_nondumpable) {
  Expect("r17_control_nondumpable", {kOk});
  const std::string log = NewDir("r17_control_nondumpable_plain");
  setenv("PKF_REDTEAM_DIR", log.c_str(), 1);
  const Verdict v = RunJudge(
      (geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "") +
          R17Launch("r17_control_nondumpable", log),
      log + "/judge_stderr");
  unsetenv("PKF_REDTEAM_DIR");
  std::printf("REDTEAM r17_control_nondumpable (plain user) status=%s message=%s\n",
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              v.parsed ? v.result.message().substr(0, 160).c_str() : v.channel_error.c_str());
  ASSERT_TRUE(v.parsed) << v.channel_error << "\n" << v.stderr_text;
  EXPECT_EQ(v.result.status(), Result::OK) << v.result.message() << "\n" << ReadFile(log + "/log");
}

}  // namespace
}  // namespace pkforge::kernels

namespace pkforge::kernels {
namespace {

// Round 17: what a candidate leaves in System V IPC (r17_ipc_leftover)
// fails the NEXT evaluation. Two launches share a 300 MiB memory cgroup (a
// CI job's, a service's, an executor lane's for bare launches): the first
// runs round 3's sysv_shm_oom_blame (a segment filled to 9 MiB short of the
// limit, never removed), the second the honest control_naive. The segment
// stays charged to the cgroup after the first launch ends, and the honest
// judge of the next launch finds the cgroup full before any rank exists
// (its own start-up allocations, e.g. the memcpy ceiling's buffers).
// 16:40 UTC: control_naive NO RESULT (the judge killed, exit 137) 3 of 3
// after it. Expected once fixed (no SysV IPC for candidate ranks, or an IPC
// namespace per launch): control_naive OK.
// Fixed with r17_ipc_leftover (886da92): the segment cannot be made
// (sysv_shm_oom_blame OK), the next launch OK (16:27 UTC).
TEST(RedTeam, r17_sysv_next_launch) {
  const std::string cg = MemoryCgroup("pkf_redteam_r17_next", int64_t{300} << 20);
  if (cg.empty()) GTEST_SKIP() << "cannot create a memory cgroup here";
  Expect("sysv_shm_oom_blame", {kRuntime, Accept{Result::SETUP_ERROR, {}}, kTimeout, kOk}, "", 10,
         cg + "/cgroup.procs", 3.0);
  Result next;
  Expect("control_naive", {kOk}, "", 10, cg + "/cgroup.procs", 0, false, &next);
  std::printf("REDTEAM r17_sysv_next_launch: the next honest launch %s (%s)\n",
              Result::Status_Name(next.status()).c_str(), next.message().substr(0, 160).c_str());
  RemoveRecordedShmSegments();
  RemoveCgroup(cg);
}

}  // namespace
}  // namespace pkforge::kernels

namespace pkforge::kernels {
namespace {

// Round 17: perf_event_open is not refused on host ranks. r17_perf_event
// (rank 0) opens a task-clock counter on each reference rank (ptrace read
// access needed: the reference ranks are non-dumpable: EACCES) and a
// CPU-wide cpu-clock sampling event on its own CPU (an hrtimer that fires
// whoever runs there, also while the candidate is frozen and the reference
// is timed: row 25's storm; refused here by kernel.perf_event_paranoid = 2,
// allowed where it is <= 0). 16:50 UTC: WRONG_OUTPUT 2 of 2 (both EACCES; a
// counter on itself opens). Held on this host; environment-dependent.
RT(r17_perf_event, {kWrong})

// Round 17, honest but unusual: idle helper pools. r17_control_polling_pool
// (4 helpers per rank in a 200 us wait_for loop, naive calls) and
// r17_control_spin_pool (3 yield-spinning workers, one runs each call, the
// main thread yield-spins for it). Both slower than the reference, where a
// conviction is only a flag. 16:55 UTC: polling OK 0.64-0.65x 5 of 5, spin
// OK 0.57-0.59x 6 of 6.
TEST(RedTeam, r17_control_polling_pool) { Expect("r17_control_polling_pool", {kOk}); }
TEST(RedTeam, r17_control_spin_pool) { Expect("r17_control_spin_pool", {kOk}); }

// Round 17: an honest FAST candidate convicted. r17_control_epoch_polling =
// control_flag_epoch's barrier-free calls + r17_control_polling_pool's 4
// idle helpers per rank (200 us wait_for loop, never given work; candidate.h
// allows helper threads idle between calls). The helpers' timed waits
// expire while the rank is stopped, so at every thaw they all run before the
// main thread, and every 200 us after; the probes early in a batch read
// "behind, its main threads had hardly run (no excuse: faster than the
// reference)" or "own threads held the CPUs", both conclusive for a
// candidate over kIdleExcuseLimit (1.25x) faster than the reference.
// 16:15-16:30 UTC: CHEAT_DETECTED batch_progress 10 of 94 launches (6 of 25
// under a load average of ~11 from other sessions; 1 of 16 in this test at
// 886da92, which changed no probe rule), OK 2.1-3.2x otherwise;
// control_flag_epoch interleaved: OK 27 of 27. Expected once fixed: OK.
TEST(RedTeamPending, r17_control_epoch_polling) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 17 (honest, CHEAT_DETECTED batch_progress 10 of 94); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  for (int i = 0; i < 8; ++i) Expect("r17_control_epoch_polling", {kOk});
}

}  // namespace
}  // namespace pkforge::kernels

namespace pkforge::kernels {
namespace {

void R17ExpectNoDatagram(const std::string& name);

// Round 17 part 2 (against 886da92/fda1214): the datagram-pair fix
// bypassed. The filter refuses socketpair types equal to SOCK_DGRAM under
// the mask 0xf, but af_unix.c unix_create() turns SOCK_RAW into SOCK_DGRAM
// (with the datagram ops, no capability needed): r17_dgram_raw sends from a
// socketpair(AF_UNIX, SOCK_RAW) socket. 16:30 UTC: OK (worked) 3 of 3, the
// named datagram service heard "from uid 65534"; the abstract one heard
// nothing (Landlock's abstract-unix-socket scope: EPERM); a SOCK_RAW pair
// socket still binds an abstract name. Expected once fixed: WRONG_OUTPUT and
// nothing heard.
// Fixed (host filter: only stream and seqpacket pairs; no bind, connect,
// listen, accept): regular.
TEST(RedTeam, r17_dgram_raw) {
  R17ExpectNoDatagram("r17_dgram_raw");
}

// Round 17 part 2, honest: scratch idioms after Landlock handles READ_FILE
// (886da92): a memfd reopened read-only through /proc/self/fd/N,
// /dev/urandom, /proc/self/status. 16:30 UTC: OK 1.00x, every open worked.
TEST(RedTeam, r17_control_memfd_reopen) { Expect("r17_control_memfd_reopen", {kOk}); }

}  // namespace
}  // namespace pkforge::kernels

namespace pkforge::kernels {
namespace {

// Round 17 part 2: the fix of r17_dgram_sendto against the ABI's text.
// candidate.h still says "socket() (socketpair stays)", and since 886da92 a
// datagram pair is EPERM on host ranks: r17_control_dgram_pair (an idle
// helper thread woken through socketpair(AF_UNIX, SOCK_DGRAM), honest by the
// text) fails pkf_setup. 16:32 UTC: SETUP_ERROR 2 of 2 ("socketpair(AF_UNIX,
// SOCK_DGRAM): Operation not permitted" on every rank). Expected once
// settled: OK, or SETUP_ERROR with candidate.h naming the refused pair
// types (the test reads the header).
// Settled: candidate.h names the refused pair types: regular.
TEST(RedTeam, r17_control_dgram_pair) {
  std::string header = __FILE__;
  header = header.substr(0, header.rfind("/harness/")) + "/include/pkforge/candidate.h";
  const std::string abi = ReadFile(header);
  const bool documented = abi.find("SOCK_DGRAM") != std::string::npos ||
                          abi.find("datagram") != std::string::npos;
  std::printf("REDTEAM r17_control_dgram_pair: %s %s datagram pairs\n", header.c_str(),
              documented ? "names" : "does not name");
  if (documented)
    Expect("r17_control_dgram_pair", {kOk, Accept{Result::SETUP_ERROR, {}}});
  else
    Expect("r17_control_dgram_pair", {kOk});
}

}  // namespace
}  // namespace pkforge::kernels
