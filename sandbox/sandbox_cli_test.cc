// pkforge-sandbox, end to end: options, pass-through, exit-status contract,
// and the promises again through the command-line path (a different code
// path for the environment, stdin and the signal-to-status mapping).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "common/ids.h"
#include "sandbox/sandbox_test_util.h"

namespace pkforge::sandbox {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace ::pkforge::sandbox::testing;  // NOLINT: test helpers

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override { scratch_ = dir_.MakeDir("scratch"); }
  // Common options: our scratch, the probe visible, a test cgroup base is not
  // needed here (the CLI uses the default "pkforge").
  std::vector<std::string> Args(std::vector<std::string> extra,
                                std::vector<std::string> command) const {
    std::vector<std::string> a = {"--scratch", scratch_, "--ro", ProbeDir(), "--memory-mb", "1024"};
    a.insert(a.end(), extra.begin(), extra.end());
    a.push_back("--");
    a.insert(a.end(), command.begin(), command.end());
    return a;
  }
  TempDir dir_;
  std::string scratch_;
};

TEST_F(CliTest, PassesOutputThroughAndExitsWithTheCommandStatus) {
  CliRun r = RunCli(Args({}, {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}));
  EXPECT_EQ(r.rc, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(RunCli(Args({}, {ProbePath(), "exit", "0"})).rc, 0);
}

TEST_F(CliTest, DeadlineExits124) {
  CliRun r = RunCli(Args({"--timeout", "1", "--cpu-seconds", "0"}, {ProbePath(), "spin"}));
  EXPECT_EQ(r.rc, 124);
  EXPECT_THAT(r.err, HasSubstr("deadline"));
}

TEST_F(CliTest, SignalExits128PlusN) {
  EXPECT_EQ(RunCli(Args({}, {ProbePath(), "signal", std::to_string(SIGSEGV)})).rc, 128 + SIGSEGV);
  EXPECT_EQ(RunCli(Args({}, {ProbePath(), "signal", std::to_string(SIGTERM)})).rc, 128 + SIGTERM);
  CliRun cpu = RunCli(Args({"--cpu-seconds", "1"}, {ProbePath(), "spin"}));
  EXPECT_THAT(cpu.rc, AnyOf(128 + SIGXCPU, 128 + SIGKILL));
}

TEST_F(CliTest, SetupFailureExits125WithAReason) {
  CliRun r = RunCli({"--bwrap", "/nonexistent/bwrap", "--", "/bin/true"});
  EXPECT_EQ(r.rc, 125);
  EXPECT_THAT(r.err, HasSubstr("cannot set up the sandbox"));
  EXPECT_THAT(r.err, HasSubstr("bubblewrap"));
  CliRun bad_ro = RunCli(Args({"--ro", "/nonexistent/dir"}, {"/bin/true"}));
  EXPECT_EQ(bad_ro.rc, 125);
  EXPECT_THAT(bad_ro.err, HasSubstr("/nonexistent/dir"));
}

TEST_F(CliTest, CommandNotFoundExits127) {
  CliRun r = RunCli(Args({}, {"/no/such/program"}));
  EXPECT_EQ(r.rc, 127);
  EXPECT_THAT(r.err, HasSubstr("not found"));
}

TEST_F(CliTest, EnvironmentIsOnlyWhatEnvPasses) {
  const std::string secret = "sk-" + NewId("cli");
  CliRun r = RunCli(Args({"--env", "FOO=bar", "--env", "PATH=/usr/bin"}, {ProbePath(), "env"}),
                    {"OPENAI_API_KEY=" + secret, "ANTHROPIC_API_KEY=" + secret});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(Values(r.out, "env"),
              ::testing::UnorderedElementsAre("FOO=bar", "PATH=/usr/bin", "PWD=" + scratch_));
  CliRun dump = RunCli(Args({}, {ProbePath(), "procfs-dump"}), {"OPENAI_API_KEY=" + secret});
  EXPECT_THAT(dump.out, Not(HasSubstr(secret)));
}

TEST_F(CliTest, OutputCappedAndFlagged) {
  CliRun r = RunCli(Args({"--max-output-kb", "4"}, {ProbePath(), "spew", "1000000"}));
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out.size(), 4096u);
  EXPECT_THAT(r.err, HasSubstr("output truncated"));
}

TEST_F(CliTest, ProcessAndFileLimits) {
  CliRun procs =
      RunCli(Args({"--max-procs", "16", "--timeout", "10"}, {ProbePath(), "forkbomb", "100000"}));
  EXPECT_LE(atoi(Value(procs.out, "forked").c_str()), 16) << procs.out << procs.err;
  EXPECT_EQ(Value(procs.out, "fork_error"), "EAGAIN");
  CliRun file =
      RunCli(Args({"--max-file-mb", "1"}, {ProbePath(), "fsize", "3000000", scratch_ + "/f"}));
  EXPECT_EQ(Value(file.out, "fsize_error"), "EFBIG");
}

TEST_F(CliTest, NoNetworkAndPrivateFilesystem) {
  CliRun net = RunCli(Args({}, {ProbePath(), "connect", "1.1.1.1", "53"}));
  EXPECT_EQ(Value(net.out, "connect"), "ENETUNREACH");
  const std::string canary = dir_.Sub("canary");
  WriteFile(canary, "secret");
  CliRun fs = RunCli(Args({}, {ProbePath(), "read", canary}));
  EXPECT_EQ(Value(fs.out, "read"), "ENOENT");
  const std::string rw = dir_.MakeDir("rw");
  CliRun w = RunCli(Args({"--rw", rw}, {ProbePath(), "write", rw + "/x"}));
  EXPECT_EQ(w.rc, 0);
  EXPECT_TRUE(FileExists(rw + "/x"));
}

TEST_F(CliTest, StdinIsPassedThrough) {
  CliRun r = RunCli(Args({}, {"/bin/cat"}), {}, "hello stdin\n");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "hello stdin\n");
}

TEST_F(CliTest, DefaultScratchIsCreatedAndRemoved) {
  CliRun r = RunCli({"--", "/bin/sh", "-c", "pwd; touch made-here && echo ok"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pkforge-sandbox-"));
  std::string dir = r.out.substr(0, r.out.find('\n'));
  EXPECT_FALSE(FileExists(dir)) << "temporary scratch left behind";
}

TEST_F(CliTest, WorksForAnUnprivilegedCaller) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
  // nobody: no cgroup write access, so the process limit falls to
  // RLIMIT_NPROC on its own uid; bwrap uses an unprivileged user namespace.
  chown(scratch_.c_str(), 65534, 65534);
  CliRun r =
      RunCli(Args({"--max-procs", "16", "--timeout", "10"}, {ProbePath(), "forkbomb", "100000"}),
             {}, "", 65534);
  if (r.rc == 125 && r.err.find("namespace") != std::string::npos) {
    GTEST_SKIP() << "this kernel refuses unprivileged user namespaces: " << r.err;
  }
  EXPECT_EQ(r.rc, 0) << r.err;
  // 16 processes of the uid in the sandbox's user namespace: the probe's
  // children, the probe and bwrap's own process inside, which is not always
  // counted yet when the probe forks (forked=17 once in a full ctest -j2,
  // session 19; 16 alone 3 of 3): contained either way.
  EXPECT_LE(atoi(Value(r.out, "forked").c_str()), 17) << r.out;
  EXPECT_EQ(Value(r.out, "fork_error"), "EAGAIN");
  CliRun ids = RunCli(Args({}, {ProbePath(), "ids"}), {}, "", 65534);
  EXPECT_EQ(Value(ids.out, "uid"), "1000") << ids.err;
  EXPECT_THAT(ids.out, HasSubstr("CapEff:\t0000000000000000"));
}

}  // namespace
}  // namespace pkforge::sandbox
