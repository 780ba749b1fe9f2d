// The orchestrator's own listener security at start: a token is required
// off loopback and enforced on every call and stream, token files and
// certificates that cannot work are refused with the file named. Split from
// orchestrator_test.cc (same orchestrator_test binary); these tests need no
// fixture, only a fake executor and a temp dir.
#include <filesystem>
#include <fstream>
#include <string>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/testing/fake_executor.h"
#include "orchestrator/testing/test_util.h"

namespace pkforge::orchestrator {
namespace {

using ::testing::HasSubstr;
using testing::FakeExecutor;


TEST(OrchestratorSecurityTest, NonLoopbackNeedsATokenAndTheTokenIsEnforced) {
  std::string dir = testing::MakeTempDir("orch_sec");
  auto exec = FakeExecutor::Start({});
  ASSERT_TRUE(exec.ok());
  OrchestratorConfig c;
  c.listen = "0.0.0.0:0";
  c.db = dir + "/traj.db";
  c.executors.push_back(ExecutorEndpoint{.address = (*exec)->address()});
  auto refused = Orchestrator::Start(c);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("token"));

  const std::string token = "orch-token-abcdef123456";
  std::ofstream(dir + "/token") << token << "\n";
  c.token_file = dir + "/token";
  auto o = Orchestrator::Start(c);
  ASSERT_TRUE(o.ok()) << o.status();
  auto stub = testing::Client(fmt::format("127.0.0.1:{}", (*o)->port()));
  auto call = [&](const std::string& header) {
    grpc::ClientContext ctx;
    if (!header.empty()) ctx.AddMetadata("authorization", header);
    v1::ListJobsResponse resp;
    return stub->ListJobs(&ctx, v1::ListJobsRequest(), &resp).error_code();
  };
  EXPECT_EQ(call(""), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(call("Bearer wrong"), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(call("Bearer " + token + "x"), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(call(token), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(call("Bearer " + token), grpc::StatusCode::OK);
  // Streams too.
  auto denied = testing::Watch(stub.get(), "job_01ARZ3NDEKTSV4RRFFQ69G5FAV", 0, true);
  EXPECT_EQ(denied.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  auto allowed = testing::Watch(stub.get(), "job_01ARZ3NDEKTSV4RRFFQ69G5FAV", 0, true, 10, token);
  EXPECT_EQ(allowed.status.error_code(), grpc::StatusCode::NOT_FOUND);
  o->reset();
  std::filesystem::remove_all(dir);
}

// The orchestrator reads its token file like the executor does
// (common/net.h ReadTokenFile): a token it requires is at least 16
// characters, and a two-line file is refused instead of becoming a token no
// client can send. Before, any non-empty text was accepted.
// A config listening on `listen` with its database in `dir` and one executor.
OrchestratorConfig ConfigWith(const std::string& listen, const std::string& dir,
                              const FakeExecutor& exec) {
  OrchestratorConfig c;
  c.listen = listen;
  c.db = dir + "/traj.db";
  c.executors.push_back(ExecutorEndpoint{.address = exec.address()});
  return c;
}

TEST(OrchestratorSecurityTest, ShortOrMultiLineTokenFilesAreRefusedAtStart) {
  std::string dir = testing::MakeTempDir("orch_tok");
  auto exec = FakeExecutor::Start({});
  ASSERT_TRUE(exec.ok());
  OrchestratorConfig c = ConfigWith("0.0.0.0:0", dir, **exec);
  for (const char* text : {"abc\n", "orch-token-abcdef123456\nsecond line\n"}) {
    std::ofstream(dir + "/token") << text;
    c.token_file = dir + "/token";
    auto o = Orchestrator::Start(c);
    ASSERT_FALSE(o.ok()) << text;
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument) << o.status();
    EXPECT_THAT(std::string(o.status().message()), HasSubstr("token_file " + dir + "/token: "));
  }
  std::filesystem::remove_all(dir);
}

// A certificate that is not PEM is named at start (the shared rpc/ shell
// checks the files); before, gRPC failed to build the server and the
// orchestrator said only "cannot listen on 127.0.0.1:0".
TEST(OrchestratorSecurityTest, NonPemCertificateIsNamedAtStart) {
  std::string dir = testing::MakeTempDir("orch_pem");
  auto exec = FakeExecutor::Start({});
  ASSERT_TRUE(exec.ok());
  OrchestratorConfig c = ConfigWith("127.0.0.1:0", dir, **exec);
  std::ofstream(dir + "/cert.pem") << "not a certificate\n";
  std::ofstream(dir + "/key.pem") << "not a key\n";
  c.tls_cert = dir + "/cert.pem";
  c.tls_key = dir + "/key.pem";
  auto o = Orchestrator::Start(c);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument) << o.status();
  EXPECT_THAT(std::string(o.status().message()),
              HasSubstr("tls_cert " + dir + "/cert.pem: not a PEM certificate"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pkforge::orchestrator
