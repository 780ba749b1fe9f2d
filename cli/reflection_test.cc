// gRPC server reflection on both daemons (issue 18 item 7), as a grpcurl-style
// tool sees it: over a real socket, a client that knows nothing of pkforge's
// protos asks each daemon which services it serves (list_services) and for
// the file that defines its service (file_containing_symbol), then reads the
// methods out of the returned FileDescriptorProto.
//
// The client is generic on purpose: gRPC's GenericStub with hand-encoded
// reflection messages (grpc.reflection.v1alpha, the version gRPC 1.51
// serves), decoded with protobuf's UnknownFieldSet. Debian ships neither
// grpcurl nor the reflection proto, and a client built on pkforge's own
// generated code could not show that the daemon, not the client, supplied the
// schema. Field numbers (ServerReflectionRequest / ServerReflectionResponse):
//   request:  file_containing_symbol = 4, list_services = 7
//   response: file_descriptor_response = 4 { repeated bytes file_descriptor_proto = 1 },
//             list_services_response = 6 { repeated ServiceResponse service = 1 { name = 1 } },
//             error_response = 7 { error_code = 1, error_message = 2 }
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/config.h"
#include "executor/server.h"
#include "cli/testing/cli_test_util.h"
#include "orchestrator/testing/test_util.h"

namespace pkforge::cli {
namespace {

namespace fs = std::filesystem;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

constexpr char kMethod[] = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

std::string EncodeRequest(int field, const std::string& value) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream zs(&out);
    google::protobuf::io::CodedOutputStream cs(&zs);
    cs.WriteTag(static_cast<uint32_t>(field << 3 | 2));  // length-delimited
    cs.WriteVarint32(static_cast<uint32_t>(value.size()));
    cs.WriteString(value);
  }
  return out;
}

// One request, one response on a ServerReflectionInfo stream; the raw
// response bytes, or "" with *error set.
std::string ReflectOnce(const std::string& address, const std::string& request,
                        std::string* error) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call = stub.PrepareCall(&ctx, kMethod, &cq);
  auto step = [&](intptr_t want) {
    void* tag = nullptr;
    bool ok = false;
    return cq.Next(&tag, &ok) && ok && reinterpret_cast<intptr_t>(tag) == want;
  };
  call->StartCall(reinterpret_cast<void*>(1));
  if (!step(1)) {
    *error = "start";
    return "";
  }
  grpc::Slice slice(request);
  grpc::ByteBuffer req(&slice, 1);
  call->Write(req, reinterpret_cast<void*>(2));
  if (!step(2)) {
    *error = "write";
    return "";
  }
  grpc::ByteBuffer resp;
  call->Read(&resp, reinterpret_cast<void*>(3));
  const bool read_ok = step(3);
  call->WritesDone(reinterpret_cast<void*>(4));
  (void)step(4);
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  (void)step(5);
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
  if (!read_ok) {
    *error = absl::StrCat("no response: ", status.error_code(), " ", status.error_message());
    return "";
  }
  std::vector<grpc::Slice> slices;
  (void)resp.Dump(&slices);
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return bytes;
}

// The length-delimited values of `field` in a message's wire bytes.
std::vector<std::string> Fields(const std::string& bytes, int field) {
  UnknownFieldSet set;
  std::vector<std::string> out;
  if (!set.ParseFromString(bytes)) return out;
  for (int i = 0; i < set.field_count(); ++i) {
    const UnknownField& f = set.field(i);
    if (f.number() == field && f.type() == UnknownField::TYPE_LENGTH_DELIMITED) {
      out.push_back(f.length_delimited());
    }
  }
  return out;
}

std::vector<std::string> ListServices(const std::string& address, std::string* error) {
  std::string resp = ReflectOnce(address, EncodeRequest(7, ""), error);
  std::vector<std::string> names;
  for (const auto& e : Fields(resp, 7)) {
    for (const auto& m : Fields(e, 2)) *error += m;
  }
  for (const auto& list : Fields(resp, 6)) {
    for (const auto& service : Fields(list, 1)) {
      for (const auto& name : Fields(service, 1)) names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The methods of `service` (full name) from the descriptor the server sends.
std::vector<std::string> Methods(const std::string& address, const std::string& service,
                                 std::string* error) {
  std::string resp = ReflectOnce(address, EncodeRequest(4, service), error);
  const std::string package = service.substr(0, service.rfind('.'));
  const std::string name = service.substr(service.rfind('.') + 1);
  std::vector<std::string> methods;
  for (const auto& fdr : Fields(resp, 4)) {
    for (const auto& bytes : Fields(fdr, 1)) {
      google::protobuf::FileDescriptorProto file;
      if (!file.ParseFromString(bytes) || file.package() != package) continue;
      for (const auto& s : file.service()) {
        if (s.name() != name) continue;
        for (const auto& m : s.method()) methods.push_back(m.name());
      }
    }
  }
  return methods;
}

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string Joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) absl::StrAppend(&out, s, " ");
  return out;
}

class ReflectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = orchestrator::testing::MakeTempDir("pkf_reflection");
    // The orchestrator as its real binary, as an operator runs it.
    test_util::DaemonOptions o;
    o.dir = dir_;
    o.orchestrator_bin = PKFORGE_ORCH_BIN;
    o.bin_dir = PKFORGE_BIN_DIR;
    o.orchestrator_args.clear();
    auto d = test_util::StartDaemons(o);
    ASSERT_TRUE(d.ok()) << d.status();
    executor_ = std::move(d->executor);
    orchestrator_ = std::move(d->orchestrator);
  }
  void TearDown() override {
    orchestrator_.reset();
    executor_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string dir_;
  std::unique_ptr<executor::ExecutorServer> executor_;
  std::unique_ptr<orchestrator::testing::ChildProcess> orchestrator_;
};

TEST_F(ReflectionTest, OrchestratorListsAndDescribesItsServices) {
  std::string error;
  auto services = ListServices(orchestrator_->address(), &error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_TRUE(Has(services, "pkforge.v1.Orchestrator")) << Joined(services);
  EXPECT_TRUE(Has(services, "grpc.health.v1.Health")) << Joined(services);
  EXPECT_TRUE(Has(services, "grpc.reflection.v1alpha.ServerReflection")) << Joined(services);
  auto methods = Methods(orchestrator_->address(), "pkforge.v1.Orchestrator", &error);
  ASSERT_TRUE(error.empty()) << error;
  for (const char* m : {"SubmitJob", "GetJob", "WatchJob", "GetTrajectory", "AnalyzePlateau",
                        "CancelJob", "ListExecutors"}) {
    EXPECT_TRUE(Has(methods, m)) << m << " not in: " << Joined(methods);
  }
}

TEST_F(ReflectionTest, ExecutorListsAndDescribesItsServices) {
  std::string error;
  auto services = ListServices(executor_->address(), &error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_TRUE(Has(services, "pkforge.v1.Executor")) << Joined(services);
  EXPECT_TRUE(Has(services, "grpc.health.v1.Health")) << Joined(services);
  auto methods = Methods(executor_->address(), "pkforge.v1.Executor", &error);
  ASSERT_TRUE(error.empty()) << error;
  for (const char* m : {"Evaluate", "DescribeDevice", "ListProblems"}) {
    EXPECT_TRUE(Has(methods, m)) << m << " not in: " << Joined(methods);
  }
}

}  // namespace
}  // namespace pkforge::cli
