// The remote `pkforge` commands over TLS with bearer tokens, end to end
// (issue 19 item 7): the real `pkforge` binary -> a real pkforge-orchestrator
// process (TLS + token) -> a real executor (TLS + token, host backend), every
// certificate from a throw-away CA made with openssl. Covers --tls-ca and
// --token-file on each remote command, PKFORGE_TLS_CA / PKFORGE_TOKEN_FILE
// from the environment (a flag wins), and that a wrong CA, a plaintext
// client, a missing or wrong token, or an unreadable CA file fail with a
// message that says what to fix.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "executor/config.h"
#include "executor/server.h"
#include "cli/testing/cli_test_util.h"
#include "orchestrator/testing/test_util.h"
#include "orchestrator/testing/tls_certs.h"

namespace pkforge::cli {
namespace {

namespace fs = std::filesystem;
using orchestrator::testing::ChildProcess;

struct Cmd {
  int rc = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

class RemoteTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(orchestrator::testing::MakeTempDir("pkf_remote_tls"));
    certs_ = new testing_tls::TestCerts(testing_tls::MakeTestCerts(*dir_));
    ASSERT_TRUE(certs_->error.empty()) << certs_->error;
    token_file_ = new std::string(Write("client.token", "client-token-7c1e55\n"));
    const std::string executor_token = Write("executor.token", "executor-token-90ab3f\n");

    // The orchestrator reaches the executor over TLS with the executor's
    // token (--executor-tls-ca, --executor-token-file), and serves TLS with
    // its own client token.
    test_util::DaemonOptions o;
    o.dir = *dir_;
    o.orchestrator_bin = PKFORGE_ORCH_BIN;
    o.bin_dir = PKFORGE_BIN_DIR;
    o.executor_timeout_s = 20;
    o.configure_executor = [&](executor::ExecutorConfig* c) {
      c->token_file = executor_token;
      c->tls_cert_file = certs_->server_cert;
      c->tls_key_file = certs_->server_key;
    };
    o.orchestrator_args = {"--executor-tls-ca", certs_->ca, "--executor-token-file",
                           executor_token, "--token-file", *token_file_, "--tls-cert",
                           certs_->server_cert, "--tls-key", certs_->server_key,
                           "--heartbeat-interval", "0.2", "--health-interval", "0.3"};
    auto d = test_util::StartDaemons(o);
    ASSERT_TRUE(d.ok()) << d.status();
    executor_ = d->executor.release();
    orchestrator_ = d->orchestrator.release();
  }
  static void TearDownTestSuite() {
    delete orchestrator_;
    orchestrator_ = nullptr;
    delete executor_;
    executor_ = nullptr;
    std::error_code ec;
    if (dir_ != nullptr) fs::remove_all(*dir_, ec);
    delete dir_;
    delete certs_;
    delete token_file_;
  }
  void SetUp() override {
    ASSERT_NE(orchestrator_, nullptr);
    ASSERT_NE(executor_, nullptr);
  }

  static std::string Write(const std::string& name, const std::string& text) {
    const std::string path = *dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  // `pkforge <args>` against the orchestrator, with exactly `env` of the
  // PKFORGE_* connection variables set (the test's own are cleared).
  static Cmd Run(const std::string& args, const std::string& env = "") {
    const std::string err = *dir_ + "/stderr.txt";
    const std::string cmd =
        absl::StrCat("env -u PKFORGE_TLS_CA -u PKFORGE_TOKEN_FILE -u PKFORGE_ORCHESTRATOR ", env,
                     " ", PKFORGE_BIN, " ", args, " --orchestrator localhost:",
                     Port(orchestrator_->address()), " 2>", err);
    Cmd r;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(err);
    r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return r;
  }
  static std::string Port(const std::string& address) {
    return address.substr(address.rfind(':') + 1);
  }
  static std::string Flags() {
    return absl::StrCat(" --tls-ca ", certs_->ca, " --token-file ", *token_file_);
  }
  static std::string Env() {
    return absl::StrCat("PKFORGE_TLS_CA=", certs_->ca, " PKFORGE_TOKEN_FILE=", *token_file_);
  }

  static std::string* dir_;
  static testing_tls::TestCerts* certs_;
  static std::string* token_file_;
  static executor::ExecutorServer* executor_;
  static ChildProcess* orchestrator_;
};

std::string* RemoteTlsTest::dir_ = nullptr;
testing_tls::TestCerts* RemoteTlsTest::certs_ = nullptr;
std::string* RemoteTlsTest::token_file_ = nullptr;
executor::ExecutorServer* RemoteTlsTest::executor_ = nullptr;
ChildProcess* RemoteTlsTest::orchestrator_ = nullptr;

constexpr char kSubmit[] =
    "submit --problem allreduce --backend host --world-size 2 --dtype f32 --size tiny "
    "--agent search --max-evaluations 2 --budget 120s --seed 7";

// A job through every hop over TLS with tokens; then each remote command
// with the flags, and each with the environment instead.
TEST_F(RemoteTlsTest, EveryRemoteCommandWorksOverTlsWithTokens) {
  Cmd submit = Run(absl::StrCat(kSubmit, " --watch", Flags()));
  ASSERT_EQ(submit.rc, 0) << submit.out << submit.err;
  const std::string job = submit.out.substr(0, submit.out.find('\n'));
  ASSERT_EQ(job.rfind("job_", 0), 0u) << submit.out;
  EXPECT_NE(submit.out.find("succeeded"), std::string::npos) << submit.out;
  EXPECT_GE(executor_->metrics().Get("pkforge_executor_evaluations_total", "status=\"OK\""), 1);

  const std::vector<std::string> commands = {
      "watch " + job, "jobs",       "show " + job, "trajectory " + job,
      "plateau",      "problems",   "executors",   "cancel " + job};
  for (const std::string& c : commands) {
    Cmd with_flags = Run(c + Flags());
    EXPECT_EQ(with_flags.rc, 0) << c << ":\n" << with_flags.out << with_flags.err;
    Cmd with_env = Run(c, Env());
    EXPECT_EQ(with_env.rc, 0) << c << " (environment):\n" << with_env.out << with_env.err;
    EXPECT_FALSE(with_env.out.empty()) << c;
  }
  Cmd jobs = Run("jobs", Env());
  EXPECT_NE(jobs.out.find(job), std::string::npos) << jobs.out;
  Cmd executors = Run("executors", Env());
  EXPECT_NE(executors.out.find(executor_->address() + " "), std::string::npos) << executors.out;
  EXPECT_NE(executors.out.find(" yes "), std::string::npos) << "executor not healthy over TLS:\n"
                                                           << executors.out;
  // submit with the environment too (a job of its own, not watched).
  Cmd env_submit = Run(kSubmit, Env());
  EXPECT_EQ(env_submit.rc, 0) << env_submit.err;
  EXPECT_EQ(env_submit.out.rfind("job_", 0), 0u) << env_submit.out;
}

// A client trusting another CA fails the handshake and says so; the flag
// wins over the environment in both directions.
TEST_F(RemoteTlsTest, WrongCaFailsWithAClearMessageAndTheFlagWinsOverTheEnvironment) {
  const std::string token = " --token-file " + *token_file_;
  Cmd wrong = Run("jobs --tls-ca " + certs_->other_ca + token);
  EXPECT_EQ(wrong.rc, 4) << wrong.out << wrong.err;  // kExitUnavailable
  EXPECT_NE(wrong.err.find("TLS handshake with the orchestrator at localhost:"), std::string::npos)
      << wrong.err;
  EXPECT_NE(wrong.err.find("signed by the --tls-ca CA"), std::string::npos) << wrong.err;

  Cmd wrong_env = Run("jobs" + token, "PKFORGE_TLS_CA=" + certs_->other_ca);
  EXPECT_EQ(wrong_env.rc, 4) << wrong_env.err;
  EXPECT_NE(wrong_env.err.find("TLS handshake"), std::string::npos) << wrong_env.err;

  Cmd flag_wins = Run("jobs --tls-ca " + certs_->ca + token, "PKFORGE_TLS_CA=" + certs_->other_ca);
  EXPECT_EQ(flag_wins.rc, 0) << flag_wins.err;
  Cmd flag_wins_token = Run("jobs --tls-ca " + certs_->ca + token,
                            "PKFORGE_TOKEN_FILE=" + Write("bad.token", "nope\n"));
  EXPECT_EQ(flag_wins_token.rc, 0) << flag_wins_token.err;

  // Plaintext against the TLS port: the hint names --tls-ca.
  Cmd plain = Run("problems" + token);
  EXPECT_EQ(plain.rc, 4) << plain.err;
  EXPECT_NE(plain.err.find("if it serves TLS, give its CA with --tls-ca"), std::string::npos)
      << plain.err;

  // A CA file that is missing or is not PEM is refused before connecting.
  Cmd missing = Run("executors --tls-ca " + *dir_ + "/no-such-ca.pem" + token);
  EXPECT_EQ(missing.rc, 2) << missing.err;  // kExitUsage
  EXPECT_NE(missing.err.find("--tls-ca (or PKFORGE_TLS_CA) " + *dir_ + "/no-such-ca.pem: cannot read"),
            std::string::npos)
      << missing.err;
  Cmd not_pem = Run("executors --tls-ca " + *token_file_ + token);
  EXPECT_EQ(not_pem.rc, 2) << not_pem.err;
  EXPECT_NE(not_pem.err.find("not a PEM certificate"), std::string::npos) << not_pem.err;
}

// Over a good TLS connection, a missing token and a wrong token are refused
// by the orchestrator, and the message names the flag and the variable.
TEST_F(RemoteTlsTest, MissingOrWrongTokenFailsWithAClearMessage) {
  const std::string ca = " --tls-ca " + certs_->ca;
  Cmd missing = Run("jobs" + ca);
  EXPECT_NE(missing.rc, 0);
  EXPECT_NE(missing.err.find("requires a bearer token: --token-file FILE or PKFORGE_TOKEN_FILE"),
            std::string::npos)
      << missing.err;
  Cmd wrong = Run("submit --agent search" + ca + " --token-file " + Write("wrong.token", "x\n"));
  EXPECT_NE(wrong.rc, 0);
  EXPECT_NE(wrong.err.find("refused the token from --token-file"), std::string::npos) << wrong.err;
  Cmd empty = Run("jobs" + ca, "PKFORGE_TOKEN_FILE=" + Write("empty.token", "\n"));
  EXPECT_EQ(empty.rc, 2) << empty.err;
  EXPECT_NE(empty.err.find("--token-file (or PKFORGE_TOKEN_FILE) "), std::string::npos) << empty.err;
  EXPECT_NE(empty.err.find("is empty"), std::string::npos) << empty.err;
}

}  // namespace
}  // namespace pkforge::cli
