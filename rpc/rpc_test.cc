// The shared daemon infrastructure: TLS credentials from PEM files (errors
// name the flag and the file, before anything listens) and the gRPC server
// shell (bound address, health SERVING -> NOT_SERVING -> gone, TLS end to
// end with a throw-away CA).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fmt/format.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "orchestrator/testing/tls_certs.h"
#include "rpc/credentials.h"
#include "rpc/server.h"

namespace pkforge::rpc {
namespace {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

class RpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fmt::format("{}/rpc_test-{}-{}", ::testing::TempDir(), getpid(), counter_++);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  // SERVING/NOT_SERVING, or the gRPC error code as a negative number.
  static int Health(const std::string& address,
                    std::shared_ptr<grpc::ChannelCredentials> creds =
                        grpc::InsecureChannelCredentials()) {
    auto stub = grpc::health::v1::Health::NewStub(grpc::CreateChannel(address, creds));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    HealthCheckResponse resp;
    grpc::Status st = stub->Check(&ctx, HealthCheckRequest(), &resp);
    return st.ok() ? resp.status() : -st.error_code();
  }
  std::string dir_;
  static inline int counter_ = 0;
};

TEST_F(RpcTest, PlaintextUnlessFilesAreGiven) {
  EXPECT_TRUE(ServerCredentials("", "").ok());
  EXPECT_TRUE(ChannelCredentials(false, "").ok());
  // TLS with no CA file: the system's roots.
  EXPECT_TRUE(ChannelCredentials(true, "").ok());
}

// The daemons used to pass these files to gRPC unchecked: a wrong path or a
// non-PEM file became "cannot listen on ...". Now the flag and file are named.
TEST_F(RpcTest, BadTlsFilesAreRefusedNamingTheFlagAndFile) {
  const std::string not_pem = Write("not.pem", "hello\n");
  auto one = ServerCredentials(not_pem, "", "--tls-cert");
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.status().message().find("--tls-cert: the TLS certificate and key go together"),
            absl::string_view::npos)
      << one.status();
  auto bad_cert = ServerCredentials(not_pem, not_pem, "--tls-cert");
  ASSERT_FALSE(bad_cert.ok());
  EXPECT_EQ(bad_cert.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_cert.status().message().find("--tls-cert " + not_pem + ": not a PEM certificate"),
            absl::string_view::npos)
      << bad_cert.status();
  auto missing = ChannelCredentials(true, dir_ + "/missing.pem", "--tls-ca");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--tls-ca " + dir_ + "/missing.pem: cannot read"),
            absl::string_view::npos)
      << missing.status();
  // A key where the certificate belongs, and the other way round.
  const testing_tls::TestCerts certs = testing_tls::MakeTestCerts(dir_);
  ASSERT_TRUE(certs.error.empty()) << certs.error;
  auto swapped = ServerCredentials(certs.server_key, certs.server_cert, "tls_cert_file");
  ASSERT_FALSE(swapped.ok());
  EXPECT_NE(swapped.status().message().find("not a PEM certificate"), absl::string_view::npos)
      << swapped.status();
  auto key_as_ca = ChannelCredentials(true, certs.server_key);
  EXPECT_FALSE(key_as_ca.ok());
  EXPECT_TRUE(ServerCredentials(certs.server_cert, certs.server_key).ok());
}

TEST_F(RpcTest, ServerIsHealthyUntilShutdownBegins) {
  ServerOptions o;
  o.listen = "127.0.0.1:0";
  auto server = GrpcServer::Start(o);
  ASSERT_TRUE(server.ok()) << server.status();
  GrpcServer& s = **server;
  EXPECT_GT(s.port(), 0);
  EXPECT_EQ(s.address(), fmt::format("127.0.0.1:{}", s.port()));
  EXPECT_FALSE(s.tls());
  EXPECT_EQ(Health(s.address()), HealthCheckResponse::SERVING);
  s.BeginShutdown();
  EXPECT_EQ(Health(s.address()), HealthCheckResponse::NOT_SERVING);
  s.Stop(std::chrono::system_clock::now());
  EXPECT_LT(Health(s.address()), 0);  // nothing listens any more
}

TEST_F(RpcTest, ServesTlsThatAClientWithTheCaAccepts) {
  const testing_tls::TestCerts certs = testing_tls::MakeTestCerts(dir_);
  ASSERT_TRUE(certs.error.empty()) << certs.error;
  ServerOptions o;
  o.listen = "localhost:0";
  o.tls_cert_file = certs.server_cert;
  o.tls_key_file = certs.server_key;
  auto server = GrpcServer::Start(o);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_TRUE((*server)->tls());
  auto good = ChannelCredentials(true, certs.ca);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(Health((*server)->address(), *good), HealthCheckResponse::SERVING);
  auto other = ChannelCredentials(true, certs.other_ca);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(Health((*server)->address(), *other), -grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Health((*server)->address()), -grpc::StatusCode::UNAVAILABLE);  // plaintext
}

TEST_F(RpcTest, AnAddressThatCannotBeBoundIsUnavailable) {
  ServerOptions o;
  o.listen = "192.0.2.1:0";  // TEST-NET-1: not an address of this host
  auto server = GrpcServer::Start(o);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(server.status().message().find("cannot listen on 192.0.2.1:0"), absl::string_view::npos);
}

}  // namespace
}  // namespace pkforge::rpc
