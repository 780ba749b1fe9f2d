// The orchestrator against real executors over real sockets (issue 15's
// missing tests): TLS on both hops, the gRPC health service, bearer tokens
// sent to executors, and least-loaded dispatch. Executors are in-process
// ExecutorServers (sandbox, compiler, pkforge-worker) on the host backend.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <thread>

#include "agent/cancel.h"
#include "executor/config.h"
#include "executor/server.h"
#include "executor/testing_candidates.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/testing/test_util.h"
#include "orchestrator/testing/tls_certs.h"

namespace pkforge::orchestrator {
namespace {

namespace fs = std::filesystem;
using executor::ExecutorServer;

struct ExecutorOptions {
  std::string token_file;
  std::string tls_cert, tls_key;
};

class RealExecutorsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("pkf_real_executors"); }
  void TearDown() override {
    for (auto& o : orchs_) o.reset();
    for (auto& e : executors_) e.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  ExecutorServer* StartExecutor(const ExecutorOptions& o = {},
                                const std::string& listen = "127.0.0.1:0") {
    executor::ExecutorConfig c;
    const std::string data = dir_ + "/executor" + std::to_string(executors_.size());
    c.listen = listen;
    c.data_dir = data;
    c.executor_id = "exec" + std::to_string(executors_.size());
    c.gpus = "none";
    c.nvcc = "none";
    c.measure_ceilings = false;
    c.host_slots = 1;
    c.default_timeout_s = 20;
    c.worker_path = std::string(PKFORGE_BIN_DIR) + "/pkforge-worker";
    c.max_file_mb = 64;
    c.tmpfs_mb = 128;
    c.run_memory_mb = 4096;
    c.token_file = o.token_file;
    c.tls_cert_file = o.tls_cert;
    c.tls_key_file = o.tls_key;
    absl::Status fin = executor::Finalize(&c, std::string(PKFORGE_BIN_DIR) + "/pkforge-executor");
    EXPECT_TRUE(fin.ok()) << fin;
    auto s = ExecutorServer::Start(c);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return nullptr;
    executors_.push_back(std::move(*s));
    return executors_.back().get();
  }

  OrchestratorConfig Config(std::vector<ExecutorEndpoint> endpoints) {
    OrchestratorConfig c;
    c.listen = "127.0.0.1:0";
    c.db = dir_ + "/traj" + std::to_string(orchs_.size()) + ".db";
    c.executors = std::move(endpoints);
    c.heartbeat_interval_s = 0.2;
    c.health_interval_s = 0.3;
    return c;
  }
  Orchestrator* StartOrchestrator(const OrchestratorConfig& c,
                                  std::shared_ptr<Resolver> resolver = nullptr) {
    auto o = Orchestrator::Start(c, std::move(resolver));
    EXPECT_TRUE(o.ok()) << o.status();
    if (!o.ok()) return nullptr;
    orchs_.push_back(std::move(*o));
    return orchs_.back().get();
  }
  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  static grpc::Status Submit(v1::Orchestrator::Stub* stub, const v1::JobSpec& spec, v1::Job* job,
                             const std::string& token = "") {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    v1::SubmitJobRequest req;
    *req.mutable_spec() = spec;
    return stub->SubmitJob(&ctx, req, job);
  }
  static v1::ExecutorStatus StatusOf(Orchestrator* o, const std::string& address) {
    o->executors()->CheckNow();
    for (const auto& s : o->executors()->List())
      if (s.address() == address) return s;
    ADD_FAILURE() << "no executor " << address;
    return {};
  }

  std::string dir_;
  std::vector<std::unique_ptr<ExecutorServer>> executors_;
  std::vector<std::unique_ptr<Orchestrator>> orchs_;
};

// Client -> orchestrator over TLS, orchestrator -> executor over TLS, each
// verified against a throw-away CA; a job's evaluations really run.
TEST_F(RealExecutorsTest, TlsOnBothHopsEndToEnd) {
  const testing_tls::TestCerts certs = testing_tls::MakeTestCerts(dir_);
  ASSERT_TRUE(certs.error.empty()) << certs.error;
  ExecutorServer* ex = StartExecutor({.tls_cert = certs.server_cert, .tls_key = certs.server_key});
  ASSERT_NE(ex, nullptr);

  OrchestratorConfig c = Config({ExecutorEndpoint{
      .address = ex->address(), .tls = true, .tls_ca_file = certs.ca}});
  c.tls_cert = certs.server_cert;
  c.tls_key = certs.server_key;
  Orchestrator* orch = StartOrchestrator(c);
  ASSERT_NE(orch, nullptr);
  EXPECT_TRUE(StatusOf(orch, ex->address()).healthy()) << StatusOf(orch, ex->address()).last_error();

  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = testing_tls::ReadAll(certs.ca);
  auto stub = v1::Orchestrator::NewStub(grpc::CreateChannel(orch->address(), grpc::SslCredentials(ssl)));
  v1::Job job;
  grpc::Status s = Submit(stub.get(), testing::SearchSpec(2, 120), &job);
  ASSERT_TRUE(s.ok()) << s.error_message();
  auto end = testing::WaitForEnd(stub.get(), job.id(), 150);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->state(), v1::JOB_STATE_SUCCEEDED) << end->error();
  EXPECT_GE(end->evaluations(), 1);
  EXPECT_GE(ex->metrics().Get("pkforge_executor_evaluations_total", "status=\"OK\""), 1);

  // A plaintext client, and a client trusting another CA, get nothing.
  for (auto creds : {grpc::InsecureChannelCredentials(),
                     grpc::SslCredentials({.pem_root_certs = testing_tls::ReadAll(certs.other_ca)})}) {
    auto bad = v1::Orchestrator::NewStub(grpc::CreateChannel(orch->address(), creds));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::ListJobsResponse resp;
    EXPECT_EQ(bad->ListJobs(&ctx, v1::ListJobsRequest(), &resp).error_code(),
              grpc::StatusCode::UNAVAILABLE);
  }
  // An orchestrator that does not trust the executor's CA (or speaks
  // plaintext to it) marks it unhealthy instead of using it.
  Orchestrator* distrust = StartOrchestrator(Config(
      {ExecutorEndpoint{.address = ex->address(), .tls = true, .tls_ca_file = certs.other_ca}}));
  ASSERT_NE(distrust, nullptr);
  v1::ExecutorStatus st = StatusOf(distrust, ex->address());
  EXPECT_FALSE(st.healthy());
  EXPECT_FALSE(st.last_error().empty());
  Orchestrator* plain = StartOrchestrator(Config({ExecutorEndpoint{.address = ex->address()}}));
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(StatusOf(plain, ex->address()).healthy());
}

// grpc.health.v1 on the orchestrator's own port: SERVING for the server
// (""), NOT_FOUND for a service it does not have.
TEST_F(RealExecutorsTest, HealthServiceAnswersOverTheSocket) {
  ExecutorServer* ex = StartExecutor();
  ASSERT_NE(ex, nullptr);
  Orchestrator* orch = StartOrchestrator(Config({ExecutorEndpoint{.address = ex->address()}}));
  ASSERT_NE(orch, nullptr);
  auto health = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(orch->address(), grpc::InsecureChannelCredentials()));
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(health->Check(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  }
  {
    grpc::ClientContext ctx;
    req.set_service("no.such.Service");
    EXPECT_EQ(health->Check(&ctx, req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  }
}

// Bearer tokens from the orchestrator to executors: with the executor's
// token jobs complete; without it (or with a wrong one) the executor is
// unhealthy with an authentication error and gets no evaluation.
TEST_F(RealExecutorsTest, BearerTokenIsSentToExecutors) {
  const std::string token = "executor-token-5f3a9c0e77";
  const std::string token_file = WriteFile("executor.token", token + "\n");
  ExecutorServer* ex = StartExecutor({.token_file = token_file});
  ASSERT_NE(ex, nullptr);

  OrchestratorConfig c = Config({ExecutorEndpoint{.address = ex->address()}});
  c.executor_token_file = token_file;  // the default token for every executor
  Orchestrator* orch = StartOrchestrator(c);
  ASSERT_NE(orch, nullptr);
  EXPECT_TRUE(StatusOf(orch, ex->address()).healthy());
  auto stub = testing::Client(orch->address());
  v1::Job job;
  ASSERT_TRUE(Submit(stub.get(), testing::SearchSpec(2, 120), &job).ok());
  auto end = testing::WaitForEnd(stub.get(), job.id(), 150);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->state(), v1::JOB_STATE_SUCCEEDED) << end->error();
  EXPECT_GE(end->evaluations(), 1);
  const double ok_before = ex->metrics().Get("pkforge_executor_evaluations_total", "status=\"OK\"");
  EXPECT_GE(ok_before, 1);

  // The per-executor token_file wins over the default.
  const std::string wrong_file = WriteFile("wrong.token", "not-the-token\n");
  OrchestratorConfig per = Config({ExecutorEndpoint{.address = ex->address(), .token_file = token_file}});
  per.executor_token_file = wrong_file;
  Orchestrator* per_orch = StartOrchestrator(per);
  ASSERT_NE(per_orch, nullptr);
  EXPECT_TRUE(StatusOf(per_orch, ex->address()).healthy());

  for (const std::string& file : {std::string(), wrong_file}) {
    OrchestratorConfig bad = Config({ExecutorEndpoint{.address = ex->address()}});
    bad.executor_token_file = file;
    Orchestrator* bad_orch = StartOrchestrator(bad);
    ASSERT_NE(bad_orch, nullptr);
    v1::ExecutorStatus st = StatusOf(bad_orch, ex->address());
    EXPECT_FALSE(st.healthy()) << file;
    // "...: missing bearer token (...) (16)" / "invalid bearer token (16)": UNAUTHENTICATED.
    EXPECT_NE(st.last_error().find("bearer token"), std::string::npos) << file << ": " << st.last_error();
    EXPECT_NE(st.last_error().find("(16)"), std::string::npos) << file << ": " << st.last_error();
  }
  EXPECT_EQ(ex->metrics().Get("pkforge_executor_evaluations_total", "status=\"OK\""), ok_before);
}

// Least-loaded dispatch over three real executors: while one is busy with a
// long evaluation, a job's evaluations all go to the two idle ones, spread
// over both; the busy one gets none.
TEST_F(RealExecutorsTest, LeastLoadedDispatchAvoidsTheBusyExecutor) {
  std::vector<ExecutorEndpoint> endpoints;
  for (int i = 0; i < 3; ++i) {
    ExecutorServer* ex = StartExecutor();
    ASSERT_NE(ex, nullptr);
    endpoints.push_back(ExecutorEndpoint{.address = ex->address()});
  }
  Orchestrator* orch = StartOrchestrator(Config(endpoints));
  ASSERT_NE(orch, nullptr);
  for (const auto& e : endpoints) ASSERT_TRUE(StatusOf(orch, e.address).healthy());

  // Occupy one executor through the pool (so the pool counts it in flight)
  // with a candidate that sleeps until cancelled; wait for its first
  // progress message, i.e. until the executor is really working on it.
  v1::EvaluateRequest hang;
  hang.set_problem("allreduce");
  hang.set_backend(v1::BACKEND_HOST);
  hang.set_world_size(2);
  hang.set_dtype(v1::DTYPE_F32);
  hang.mutable_size()->set_preset("tiny");
  std::string src = executor::test_candidates::kAllreduce;
  src.replace(src.find("/*PRE*/"), 7, "for (;;) usleep(100000);");
  hang.set_source(src);
  hang.set_timeout_s(120);
  agent::CancelToken cancel;
  std::promise<void> started;
  std::once_flag once;
  std::thread busy([&] {
    auto r = orch->executors()->Evaluate(
        hang, [&](const v1::EvaluateProgress&) { std::call_once(once, [&] { started.set_value(); }); },
        cancel);
    std::call_once(once, [&] { started.set_value(); });  // never hang the test on an error
  });
  started.get_future().wait();
  std::string busy_address;
  for (const auto& s : orch->executors()->List())
    if (s.in_flight() == 1) busy_address = s.address();
  ASSERT_FALSE(busy_address.empty());

  auto stub = testing::Client(orch->address());
  v1::Job job;
  ASSERT_TRUE(Submit(stub.get(), testing::SearchSpec(4, 180), &job).ok());
  auto end = testing::WaitForEnd(stub.get(), job.id(), 200);
  const std::vector<v1::ExecutorStatus> after = orch->executors()->List();
  cancel.Cancel();
  busy.join();
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->state(), v1::JOB_STATE_SUCCEEDED) << end->error();
  ASSERT_GE(end->evaluations(), 2);

  int64_t idle_total = 0;
  for (const auto& s : after) {
    if (s.address() == busy_address) {
      EXPECT_EQ(s.in_flight(), 1);
      EXPECT_EQ(s.completed(), 0) << "the busy executor got job evaluations";
    } else {
      EXPECT_GE(s.completed(), 1) << s.address() << " got none: no spread over idle executors";
      idle_total += s.completed();
    }
  }
  // The search's evaluations and the job's final fresh re-measurement.
  EXPECT_EQ(idle_total, end->evaluations() + 1);
  EXPECT_TRUE(end->has_final_speedup()) << end->final_evaluation_id();
}

// Real executors behind one DNS name (issue 19 item 4; a fixed-answer
// resolver is the seam, the executors listen on 127.0.0.2 and 127.0.0.3 with
// one port, like pods behind a headless Service): jobs run on the executor
// the name lists; one joins, the first leaves, and the next job runs on the
// newcomer only.
TEST_F(RealExecutorsTest, DnsDiscoveredExecutorsJoinAndLeaveBetweenJobs) {
  class Answers final : public Resolver {
   public:
    void Set(std::vector<std::string> ips) {
      std::lock_guard lock(mu_);
      ips_ = std::move(ips);
    }
    absl::StatusOr<std::vector<std::string>> Resolve(const std::string& host) override {
      std::lock_guard lock(mu_);
      if (host != "executors.test" || ips_.empty()) return absl::NotFoundError(host + ": no address");
      return ips_;
    }

   private:
    std::mutex mu_;
    std::vector<std::string> ips_;
  };
  ExecutorServer* a = StartExecutor({}, "127.0.0.2:0");
  ASSERT_NE(a, nullptr);
  const std::string port = a->address().substr(a->address().rfind(':') + 1);
  ExecutorServer* b = StartExecutor({}, "127.0.0.3:" + port);
  ASSERT_NE(b, nullptr);
  auto answers = std::make_shared<Answers>();
  answers->Set({"127.0.0.2"});
  OrchestratorConfig c = Config({ExecutorEndpoint{.address = "dns:///executors.test:" + port}});
  c.discovery_interval_s = 3600;  // re-resolved when the test says so
  Orchestrator* orch = StartOrchestrator(c, answers);
  ASSERT_NE(orch, nullptr);
  const std::string addr_a = "127.0.0.2:" + port, addr_b = "127.0.0.3:" + port;
  ASSERT_TRUE(StatusOf(orch, addr_a).healthy()) << StatusOf(orch, addr_a).last_error();
  auto ok_on = [](ExecutorServer* e) {
    return e->metrics().Get("pkforge_executor_evaluations_total", "status=\"OK\"");
  };
  auto stub = testing::Client(orch->address());
  auto run_job = [&] {
    v1::Job job;
    grpc::Status s = Submit(stub.get(), testing::SearchSpec(2, 120), &job);
    EXPECT_TRUE(s.ok()) << s.error_message();
    auto end = testing::WaitForEnd(stub.get(), job.id(), 150);
    EXPECT_TRUE(end.ok()) << end.status();
    if (end.ok()) {
      EXPECT_EQ(end->state(), v1::JOB_STATE_SUCCEEDED) << end->error();
    }
  };
  run_job();
  EXPECT_GE(ok_on(a), 1);
  EXPECT_EQ(ok_on(b), 0);

  answers->Set({"127.0.0.2", "127.0.0.3"});  // b joins
  ASSERT_TRUE(orch->ReloadExecutors().ok());
  EXPECT_TRUE(StatusOf(orch, addr_b).healthy()) << StatusOf(orch, addr_b).last_error();
  answers->Set({"127.0.0.3"});  // a leaves
  ASSERT_TRUE(orch->ReloadExecutors().ok());
  std::set<std::string> listed;
  for (const auto& s : orch->executors()->List()) listed.insert(s.address());
  EXPECT_EQ(listed, std::set<std::string>{addr_b});
  const double a_before = ok_on(a);
  run_job();
  EXPECT_EQ(ok_on(a), a_before) << "an executor that left got evaluations";
  EXPECT_GE(ok_on(b), 1);
}

}  // namespace
}  // namespace pkforge::orchestrator
