// Checks that the generated v1 API has the shape other modules rely on: every
// RPC with its streaming mode, the failure classes with their exact JSON names
// (the worker's --json output and researchers' scripts depend on them), proto3
// JSON round trips, and that a generated service really serves over a socket.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <set>
#include <string>

#include "gtest/gtest.h"
#include "pkforge/v1/executor.grpc.pb.h"
#include "pkforge/v1/orchestrator.grpc.pb.h"

namespace pkforge::v1 {
namespace {

using google::protobuf::MethodDescriptor;
using google::protobuf::ServiceDescriptor;

void ExpectMethod(const ServiceDescriptor* s, const std::string& name, bool server_streaming) {
  const MethodDescriptor* m = s->FindMethodByName(name);
  ASSERT_NE(m, nullptr) << s->full_name() << " lacks " << name;
  EXPECT_EQ(m->server_streaming(), server_streaming) << name;
  EXPECT_FALSE(m->client_streaming()) << name;
}

TEST(ProtoTest, ExecutorServiceShape) {
  const ServiceDescriptor* s = EvaluateRequest::descriptor()->file()->FindServiceByName("Executor");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->full_name(), "pkforge.v1.Executor");
  ExpectMethod(s, "Evaluate", true);
  ExpectMethod(s, "DescribeDevice", false);
  ExpectMethod(s, "ListProblems", false);
}

TEST(ProtoTest, OrchestratorServiceShape) {
  const ServiceDescriptor* s = Job::descriptor()->file()->FindServiceByName("Orchestrator");
  ASSERT_NE(s, nullptr);
  for (const char* unary : {"SubmitJob", "GetJob", "ListJobs", "CancelJob", "GetTrajectory",
                            "AnalyzePlateau", "ListProblems", "ListExecutors"}) {
    ExpectMethod(s, unary, false);
  }
  ExpectMethod(s, "WatchJob", true);
  EXPECT_EQ(s->method_count(), 9);
}

TEST(ProtoTest, EveryFailureClassHasItsDesignName) {
  const auto* e = EvaluationResult::Status_descriptor();
  std::set<std::string> names;
  for (int i = 0; i < e->value_count(); ++i) names.insert(e->value(i)->name());
  for (const char* n : {"OK", "COMPILE_ERROR", "SETUP_ERROR", "RUNTIME_ERROR", "TIMEOUT",
                        "WRONG_OUTPUT", "CHEAT_DETECTED"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
}

TEST(ProtoTest, EvaluationResultJsonRoundTrip) {
  EvaluationResult r;
  r.set_status(EvaluationResult::WRONG_OUTPUT);
  r.set_problem("allreduce");
  r.set_backend(BACKEND_CUDA);
  r.set_dtype(DTYPE_BF16);
  r.mutable_size()->set_preset("tiny");
  OutputCheck* c = r.mutable_correctness()->add_checks();
  c->set_rank(3);
  c->set_output("out");
  c->set_first_mismatch_index(17);
  c->set_expected(1.5);
  c->set_actual(2.0);
  r.mutable_candidate()->set_median_us(123.5);
  r.set_speedup(1.25);

  std::string json;
  google::protobuf::util::JsonPrintOptions opts;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(r, &json, opts).ok());
  EXPECT_NE(json.find(R"("status":"WRONG_OUTPUT")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("backend":"BACKEND_CUDA")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("firstMismatchIndex":"17")"), std::string::npos) << json;

  EvaluationResult back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &back).ok());
  EXPECT_EQ(back.status(), EvaluationResult::WRONG_OUTPUT);
  EXPECT_EQ(back.correctness().checks(0).rank(), 3);
  EXPECT_TRUE(back.has_speedup());
  EXPECT_DOUBLE_EQ(back.speedup(), 1.25);
  EvaluationResult no_speedup;
  EXPECT_FALSE(no_speedup.has_speedup());  // optional: absent != 0
}

// A generated callback service answering over a real loopback socket.
class TestExecutor final : public Executor::CallbackService {
  grpc::ServerUnaryReactor* ListProblems(grpc::CallbackServerContext* ctx,
                                         const ListProblemsRequest* req,
                                         ListProblemsResponse* resp) override {
    auto* p = resp->add_problems();
    p->set_name("allreduce");
    p->set_min_world_size(req->world_size());
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

TEST(ProtoTest, CallbackServiceServesOverLoopback) {
  TestExecutor service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  auto stub = Executor::NewStub(channel);
  grpc::ClientContext ctx;
  ListProblemsRequest req;
  req.set_world_size(4);
  ListProblemsResponse resp;
  grpc::Status st = stub->ListProblems(&ctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.problems_size(), 1);
  EXPECT_EQ(resp.problems(0).name(), "allreduce");
  EXPECT_EQ(resp.problems(0).min_world_size(), 4);
  server->Shutdown();
}

}  // namespace
}  // namespace pkforge::v1
