// End-to-end tests of the executor on the host backend: a real
// ExecutorServer (sandbox, compiler, cache, queue, pkforge-worker) on an
// ephemeral loopback port, driven over real gRPC; plus the pkforge-executor
// binary itself for start-up checks and `pkforge eval`.
#include <dirent.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "executor/server.h"

#include <fcntl.h>
#include "executor/testing_candidates.h"
#include "kernels/harness/problem.h"
#include "pkforge/v1/executor.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace pkforge::executor {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Result = v1::EvaluationResult;

using test_candidates::kAllreduce;

std::string Variant(const std::string& pre, const std::string& post = "") {
  return absl::StrReplaceAll(kAllreduce, {{"/*PRE*/", pre}, {"/*POST*/", post}});
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/pkf_executor_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

ExecutorConfig TestConfig(const std::string& dir) {
  ExecutorConfig c;
  c.listen = "127.0.0.1:0";
  c.data_dir = dir + "/data";
  c.gpus = "none";
  c.nvcc = "none";
  c.measure_ceilings = false;
  c.host_slots = 2;
  c.default_timeout_s = 20;
  c.worker_path = std::string(PKFORGE_BIN_DIR) + "/pkforge-worker";
  c.max_file_mb = 64;
  c.tmpfs_mb = 128;
  c.run_memory_mb = 4096;
  return c;
}

struct Evaluation {
  grpc::Status status;
  std::vector<v1::EvaluateProgress> progress;  // everything but the result
  Result result;
  bool has_result = false;
};

v1::EvaluateRequest Request(const std::string& source, int world = 2) {
  v1::EvaluateRequest r;
  r.set_problem("allreduce");
  r.set_backend(v1::BACKEND_HOST);
  r.set_world_size(world);
  r.set_dtype(v1::DTYPE_F32);
  r.mutable_size()->set_preset("tiny");
  r.set_source(source);
  r.set_trials(2);
  r.set_warmup_iters(1);
  r.set_timed_iters(3);
  r.set_timeout_s(10);
  return r;
}

class ExecutorTest : public ::testing::Test {
 protected:
  void Start(ExecutorConfig c) {
    ASSERT_TRUE(Finalize(&c, std::string(PKFORGE_BIN_DIR) + "/pkforge-executor").ok());
    config_ = c;
    auto s = ExecutorServer::Start(c);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = v1::Executor::NewStub(channel_);
  }
  void SetUp() override { Start(TestConfig(dir_.path())); }

  Evaluation Evaluate(const v1::EvaluateRequest& req, grpc::ClientContext* ctx = nullptr) {
    grpc::ClientContext local;
    if (ctx == nullptr) ctx = &local;
    Evaluation e;
    auto reader = stub_->Evaluate(ctx, req);
    v1::EvaluateProgress msg;
    while (reader->Read(&msg)) {
      if (msg.has_result()) {
        e.result = msg.result();
        e.has_result = true;
      } else {
        e.progress.push_back(msg);
      }
    }
    e.status = reader->Finish();
    return e;
  }

  // Host pids whose command line mentions `needle` (the evaluation's scratch
  // path is in the worker's argv).
  // A /proc file of a process that may exit while we read it (an ifstream
  // then throws "No such process" from underflow): plain reads, errors = "".
  static std::string ReadProcFile(const std::string& path) {
    std::string out;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    close(fd);
    return out;
  }

  static std::vector<pid_t> ProcessesMentioning(const std::string& needle) {
    std::vector<pid_t> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string cmd = ReadProcFile((e.path() / "cmdline").string());
      std::replace(cmd.begin(), cmd.end(), '\0', ' ');
      if (cmd.find(needle) != std::string::npos && cmd.find("pkforge-worker") != std::string::npos &&
          cmd.find("bwrap") == std::string::npos)
        out.push_back(std::stoi(name));
    }
    return out;
  }

  TempDir dir_;
  ExecutorConfig config_;
  std::unique_ptr<ExecutorServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Executor::Stub> stub_;
};

TEST_F(ExecutorTest, CorrectCandidateIsOkWithProgressInOrder) {
  Evaluation e = Evaluate(Request(Variant("")));
  ASSERT_TRUE(e.status.ok()) << e.status.error_message();
  ASSERT_TRUE(e.has_result);
  EXPECT_EQ(e.result.status(), Result::OK) << e.result.message();
  EXPECT_TRUE(e.result.has_speedup());
  EXPECT_GT(e.result.candidate().median_us(), 0);
  EXPECT_FALSE(e.result.evaluation_id().empty());
  EXPECT_FALSE(e.result.compile().cache_hit());
  EXPECT_GT(e.result.compile().compile_ms(), 0);
  EXPECT_GT(e.result.stages().run_ms(), 0);
  EXPECT_GE(e.result.stages().total_ms(), e.result.stages().run_ms());
  EXPECT_FALSE(e.result.unsafe_no_sandbox());
  EXPECT_EQ(e.result.problem(), "allreduce");
  EXPECT_EQ(e.result.world_size(), 2);
  // compiling -> queued -> running, in that order.
  std::vector<int> stages;
  for (const auto& p : e.progress) stages.push_back(p.stage_case());
  ASSERT_GE(stages.size(), 3u);
  EXPECT_EQ(stages.front(), v1::EvaluateProgress::kCompiling);
  EXPECT_EQ(stages.back(), v1::EvaluateProgress::kRunning);
  EXPECT_NE(std::find(stages.begin(), stages.end(), v1::EvaluateProgress::kQueued), stages.end());
  std::cout << "host allreduce ws=2 tiny: total " << e.result.stages().total_ms() << " ms (compile "
            << e.result.stages().compile_ms() << ", queue " << e.result.stages().queue_ms()
            << ", run " << e.result.stages().run_ms() << ")\n";
}

TEST_F(ExecutorTest, CompileErrorCarriesTheCompilerOutput) {
  Evaluation e = Evaluate(Request("#include \"pkforge/candidate.h\"\nint broken( { return 0; }\n"));
  ASSERT_TRUE(e.status.ok());
  EXPECT_EQ(e.result.status(), Result::COMPILE_ERROR);
  EXPECT_NE(e.result.compile().output().find("error"), std::string::npos) << e.result.compile().output();
  EXPECT_NE(e.result.message().find("compile error"), std::string::npos);
}

TEST_F(ExecutorTest, WrongOutputNamesTheMismatch) {
  Evaluation e = Evaluate(Request(Variant("", " + (i == 3 ? 1.0f : 0.0f)")));
  ASSERT_TRUE(e.status.ok());
  ASSERT_EQ(e.result.status(), Result::WRONG_OUTPUT) << e.result.message();
  ASSERT_GT(e.result.correctness().checks_size(), 0);
  const auto& c = e.result.correctness().checks(0);
  EXPECT_EQ(c.first_mismatch_index(), 3);
  EXPECT_NEAR(c.actual() - c.expected(), 1.0, 1e-3);
}

TEST_F(ExecutorTest, HangIsATimeoutAndTheTreeIsGone) {
  v1::EvaluateRequest req = Request(Variant("if (ctx->rank == 1) for (;;) usleep(100000);"));
  req.set_timeout_s(2);
  const auto t0 = std::chrono::steady_clock::now();
  Evaluation e = Evaluate(req);
  ASSERT_TRUE(e.status.ok());
  EXPECT_EQ(e.result.status(), Result::TIMEOUT) << e.result.message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s);
  EXPECT_TRUE(ProcessesMentioning(e.result.evaluation_id()).empty());
}

TEST_F(ExecutorTest, CrashIsARuntimeErrorNamingTheRank) {
  Evaluation e = Evaluate(Request(Variant("if (ctx->rank == 1) *(volatile int*)0 = 1;")));
  ASSERT_TRUE(e.status.ok());
  ASSERT_EQ(e.result.status(), Result::RUNTIME_ERROR) << e.result.message();
  ASSERT_GT(e.result.failures_size(), 0);
  EXPECT_EQ(e.result.failures(0).rank(), 1);
}

TEST_F(ExecutorTest, CacheHitDoesNotCompileAgain) {
  const std::string src = Variant("/* cache test */");
  Evaluation a = Evaluate(Request(src));
  Evaluation b = Evaluate(Request(src));
  ASSERT_EQ(a.result.status(), Result::OK);
  ASSERT_EQ(b.result.status(), Result::OK);
  EXPECT_FALSE(a.result.compile().cache_hit());
  EXPECT_TRUE(b.result.compile().cache_hit());
  EXPECT_EQ(a.result.compile().artifact_sha256(), b.result.compile().artifact_sha256());
  EXPECT_EQ(server_->metrics().Get("pkforge_executor_compile_total", "cache=\"hit\""), 1);
  std::cout << "compile miss " << a.result.compile().compile_ms() << " ms, hit "
            << b.result.stages().compile_ms() << " ms\n";
}

TEST_F(ExecutorTest, SixteenConcurrentEvaluationsAreAllAnswered) {
  std::vector<std::thread> threads;
  std::vector<Evaluation> results(16);
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&, i] {
      // Four distinct sources, a wrong one among them: answers must match.
      const std::string src = i % 4 == 3 ? Variant("", " * 2.0f")
                                         : Variant(absl::StrCat("/* v", i % 4, " */"));
      v1::EvaluateRequest req = Request(src, 1 + i % 3);
      req.set_client_tag(absl::StrCat("job_", i % 5, " turn ", i));
      results[i] = Evaluate(req);
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(results[i].status.ok()) << i << ": " << results[i].status.error_message();
    EXPECT_EQ(results[i].result.status(), i % 4 == 3 ? Result::WRONG_OUTPUT : Result::OK)
        << i << ": " << results[i].result.message();
    EXPECT_EQ(results[i].result.world_size(), 1 + i % 3);
  }
  EXPECT_EQ(server_->metrics().Get("pkforge_executor_evaluations_total", "status=\"OK\""), 12);
}

struct InvalidCase {
  std::string name;
  std::function<void(v1::EvaluateRequest*)> mutate;
  grpc::StatusCode code;
  std::string field;
};

TEST_F(ExecutorTest, InvalidRequestsAreRejectedNamingTheField) {
  const std::vector<InvalidCase> cases = {
      {"unknown problem", [](auto* r) { r->set_problem("nope"); }, grpc::INVALID_ARGUMENT, "problem"},
      {"no backend", [](auto* r) { r->set_backend(v1::BACKEND_UNSPECIFIED); }, grpc::INVALID_ARGUMENT, "backend"},
      {"cuda without GPU", [](auto* r) { r->set_backend(v1::BACKEND_CUDA); }, grpc::FAILED_PRECONDITION, "backend"},
      {"world 0", [](auto* r) { r->set_world_size(0); }, grpc::INVALID_ARGUMENT, "world_size"},
      {"world 1000", [](auto* r) { r->set_world_size(1000); }, grpc::INVALID_ARGUMENT, "world_size"},
      {"bad dtype", [](auto* r) { r->set_dtype(v1::DTYPE_I64); }, grpc::INVALID_ARGUMENT, "dtype"},
      {"bad preset", [](auto* r) { r->mutable_size()->set_preset("huge"); }, grpc::INVALID_ARGUMENT, "size"},
      {"bad dim", [](auto* r) { (*r->mutable_size()->mutable_dims()->mutable_values())["Q"] = 4; }, grpc::INVALID_ARGUMENT, "size"},
      {"empty source", [](auto* r) { r->clear_source(); }, grpc::INVALID_ARGUMENT, "source"},
      {"huge source", [](auto* r) { r->set_source(std::string((1 << 20) + 1, 'x')); }, grpc::INVALID_ARGUMENT, "source"},
      {"bad flag", [](auto* r) { r->add_extra_flags("-fplugin=/tmp/x.so"); }, grpc::INVALID_ARGUMENT, "extra_flags"},
      {"trials", [](auto* r) { r->set_trials(101); }, grpc::INVALID_ARGUMENT, "trials"},
      {"negative iters", [](auto* r) { r->set_timed_iters(-1); }, grpc::INVALID_ARGUMENT, "timed_iters"},
      {"warmup", [](auto* r) { r->set_warmup_iters(20000); }, grpc::INVALID_ARGUMENT, "warmup_iters"},
      {"timeout", [](auto* r) { r->set_timeout_s(1e9); }, grpc::INVALID_ARGUMENT, "timeout_s"},
      {"sanitize on host", [](auto* r) { r->set_sanitize(v1::SANITIZER_MEMCHECK); }, grpc::FAILED_PRECONDITION, "sanitize"},
      {"profile on host", [](auto* r) { r->set_profile(true); }, grpc::FAILED_PRECONDITION, "profile"},
      {"long tag", [](auto* r) { r->set_client_tag(std::string(300, 't')); }, grpc::INVALID_ARGUMENT, "client_tag"},
  };
  for (const auto& c : cases) {
    v1::EvaluateRequest req = Request(Variant(""));
    c.mutate(&req);
    Evaluation e = Evaluate(req);
    EXPECT_EQ(e.status.error_code(), c.code) << c.name << ": " << e.status.error_message();
    EXPECT_NE(e.status.error_message().find(c.field), std::string::npos)
        << c.name << ": '" << e.status.error_message() << "' does not name " << c.field;
    EXPECT_FALSE(e.has_result) << c.name;
  }
  // Invalid UTF-8 in `source` (a proto3 string) is refused by protobuf's own
  // parser before the handler runs (gRPC answers UNIMPLEMENTED "failed to
  // deserialize"); the executor's own check is the second line of defence.
  v1::EvaluateRequest bad = Request("int x; // \xff\xfe");
  Evaluation e = Evaluate(bad);
  EXPECT_FALSE(e.status.ok());
  EXPECT_FALSE(e.has_result);
  EXPECT_EQ(server_->metrics().Get("pkforge_executor_evaluations_total", "status=\"OK\""), 0);
}

TEST_F(ExecutorTest, KeepsServingAfterTheWorkerIsKilled) {
  v1::EvaluateRequest slow = Request(Variant("for (;;) usleep(100000);"));
  slow.set_timeout_s(60);
  std::atomic<bool> done{false};
  Evaluation killed;
  std::thread t([&] {
    killed = Evaluate(slow);
    done = true;
  });
  // SIGKILL the worker (judge) process of this evaluation, and again when
  // the executor retries it: a judge that dies is a harness fault, retried
  // once, then reported as HARNESS_ERROR (never as the candidate's status).
  int kills = 0;
  for (int i = 0; i < 1200 && !done; ++i) {
    std::this_thread::sleep_for(50ms);
    for (pid_t p : ProcessesMentioning(*SandboxRoot(config_))) {
      std::string cmd = ReadProcFile("/proc/" + std::to_string(p) + "/cmdline");
      if (cmd.find("launch") != std::string::npos && kill(p, SIGKILL) == 0) ++kills;
    }
  }
  t.join();
  ASSERT_GE(kills, 2) << "the judge of each attempt should have been killed";
  ASSERT_TRUE(killed.status.ok()) << killed.status.error_message();
  EXPECT_EQ(killed.result.status(), Result::HARNESS_ERROR) << killed.result.message();
  EXPECT_NE(killed.result.message().find("without a result"), std::string::npos);
  bool retried = false;
  for (const auto& f : killed.result.flags())
    retried = retried || f.find("first attempt too") != std::string::npos;
  EXPECT_TRUE(retried) << "the executor retries a harness error once";
  // And the next evaluation is fine.
  Evaluation next = Evaluate(Request(Variant("")));
  EXPECT_EQ(next.result.status(), Result::OK) << next.result.message();
}

TEST_F(ExecutorTest, KeepsServingAfterACandidateFillsItsScratch) {
  // Fills the scratch folder (file size limit), then /tmp and /dev/shm
  // (tmpfs size), then computes the right answer.
  const std::string fill = R"(
    static int filled = 0;
    if (!filled && ctx->rank == 0) {
      filled = 1;
      static char block[1 << 20];
      memset(block, 'x', sizeof block);
      const char* paths[] = {"fill.bin", "/tmp/fill.bin", "/dev/shm/fill.bin"};
      for (int p = 0; p < 3; ++p) {
        FILE* f = fopen(paths[p], "w");
        if (!f) continue;
        for (int i = 0; i < 512; ++i) if (fwrite(block, 1, sizeof block, f) != sizeof block) break;
        fclose(f);
      }
    })";
  Evaluation e = Evaluate(Request(Variant(fill)));
  ASSERT_TRUE(e.status.ok()) << e.status.error_message();
  EXPECT_TRUE(e.has_result);
  std::cout << "scratch filler: " << Result::Status_Name(e.result.status()) << ": "
            << e.result.message() << "\n";
  // The scratch of the evaluation is gone, and the executor still works.
  EXPECT_TRUE(fs::is_empty(*SandboxRoot(config_) + "/scratch"));
  Evaluation next = Evaluate(Request(Variant("")));
  EXPECT_EQ(next.result.status(), Result::OK) << next.result.message();
}

TEST_F(ExecutorTest, ClientCancellationStopsTheWorker) {
  v1::EvaluateRequest slow = Request(Variant("for (;;) usleep(100000);"));
  slow.set_timeout_s(60);
  grpc::ClientContext ctx;
  std::thread t([&] { Evaluate(slow, &ctx); });
  for (int i = 0; i < 400 && ProcessesMentioning(*SandboxRoot(config_)).empty(); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_FALSE(ProcessesMentioning(*SandboxRoot(config_)).empty());
  ctx.TryCancel();
  t.join();
  for (int i = 0; i < 100 && !ProcessesMentioning(*SandboxRoot(config_)).empty(); ++i) std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(ProcessesMentioning(*SandboxRoot(config_)).empty()) << "worker still running after cancel";
  for (int i = 0; i < 100 && server_->service().in_flight() > 0; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(server_->service().in_flight(), 0);
}

TEST_F(ExecutorTest, DescribeDeviceListProblemsHealthAndMetrics) {
  grpc::ClientContext c1;
  v1::DeviceInfo info;
  ASSERT_TRUE(stub_->DescribeDevice(&c1, v1::DescribeDeviceRequest(), &info).ok());
  EXPECT_EQ(info.backends_size(), 1);
  EXPECT_EQ(info.backends(0), v1::BACKEND_HOST);
  EXPECT_GT(info.cpu_cores(), 0);
  EXPECT_GT(info.ceilings().host_memory_gbps(), 0.1);
  EXPECT_EQ(info.sandbox().mode(), "bubblewrap");
  EXPECT_FALSE(info.executor_id().empty());

  grpc::ClientContext c2;
  v1::ListProblemsRequest lreq;
  lreq.set_world_size(4);
  lreq.set_dtype(v1::DTYPE_BF16);
  v1::ListProblemsResponse problems;
  ASSERT_TRUE(stub_->ListProblems(&c2, lreq, &problems).ok());
  EXPECT_EQ(problems.problems_size(), static_cast<int>(kernels::Problems().size()));
  for (const auto& p : problems.problems()) {
    EXPECT_EQ(p.backends_size(), 1) << p.name();
    if (p.name() == "allreduce") {
      ASSERT_GT(p.inputs_size(), 0);
      EXPECT_EQ(p.inputs(0).dtype(), v1::DTYPE_BF16);
    }
  }

  grpc::ClientContext c3;
  grpc::health::v1::HealthCheckRequest hreq;
  grpc::health::v1::HealthCheckResponse hresp;
  auto health = grpc::health::v1::Health::NewStub(channel_);
  ASSERT_TRUE(health->Check(&c3, hreq, &hresp).ok());
  EXPECT_EQ(hresp.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  Evaluate(Request(Variant("")));
  const std::string text = server_->metrics().Render();
  EXPECT_NE(text.find("pkforge_executor_evaluations_total{status=\"OK\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("pkforge_executor_queue_length 0"), std::string::npos) << text;
  EXPECT_NE(text.find("pkforge_executor_host_busy_seconds_total"), std::string::npos) << text;
}

TEST_F(ExecutorTest, ShutdownStopsInFlightWorkWithAClearError) {
  v1::EvaluateRequest slow = Request(Variant("for (;;) usleep(100000);"));
  slow.set_timeout_s(60);
  Evaluation e;
  std::thread t([&] { e = Evaluate(slow); });
  for (int i = 0; i < 400 && ProcessesMentioning(*SandboxRoot(config_)).empty(); ++i) std::this_thread::sleep_for(50ms);
  server_->Shutdown(0.5);
  t.join();
  EXPECT_EQ(e.status.error_code(), grpc::StatusCode::UNAVAILABLE) << e.status.error_message();
  EXPECT_NE(e.status.error_message().find("shutting down"), std::string::npos);
  EXPECT_TRUE(ProcessesMentioning(*SandboxRoot(config_)).empty());
}

class ExecutorTokenTest : public ExecutorTest {
 protected:
  void SetUp() override {}
};

TEST_F(ExecutorTokenTest, OffLoopbackATokenIsRequired) {
  const std::string token = "s3cret-token-0123456789";
  const std::string token_file = dir_.path() + "/token";
  std::ofstream(token_file) << token << "\n";
  ExecutorConfig c = TestConfig(dir_.path());
  c.listen = "0.0.0.0:0";
  c.token_file = token_file;
  Start(c);
  const std::string port = server_->address().substr(server_->address().rfind(':') + 1);
  auto channel = grpc::CreateChannel("127.0.0.1:" + port, grpc::InsecureChannelCredentials());
  auto stub = v1::Executor::NewStub(channel);
  auto list = [&](const std::string& auth) {
    grpc::ClientContext ctx;
    if (!auth.empty()) ctx.AddMetadata("authorization", auth);
    v1::ListProblemsResponse resp;
    return stub->ListProblems(&ctx, v1::ListProblemsRequest(), &resp);
  };
  EXPECT_EQ(list("").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(list("Bearer wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(list("Bearer " + token.substr(0, token.size() - 1) + "X").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(list("Bearer " + token).ok());
  // Evaluate too, and the token never shows up in a result.
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer nope");
  auto reader = stub->Evaluate(&ctx, Request(Variant("")));
  v1::EvaluateProgress msg;
  while (reader->Read(&msg)) {}
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext ok_ctx;
  ok_ctx.AddMetadata("authorization", "Bearer " + token);
  auto ok_reader = stub->Evaluate(&ok_ctx, Request(Variant("")));
  std::string all;
  while (ok_reader->Read(&msg)) all += msg.DebugString();
  EXPECT_TRUE(ok_reader->Finish().ok());
  EXPECT_NE(all.find("OK"), std::string::npos);
  EXPECT_EQ(all.find(token), std::string::npos);
}

// Issue #15 item 11: a dtype outside the enum was reported as
// "dtype:  is not allowed" (blank name).
TEST_F(ExecutorTest, UnknownDtypeValueIsNamed) {
  v1::EvaluateRequest req = Request(Variant(""));
  req.set_dtype(static_cast<v1::Dtype>(99));
  Evaluation e = Evaluate(req);
  EXPECT_EQ(e.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(e.status.error_message().find("dtype"), std::string::npos) << e.status.error_message();
  EXPECT_NE(e.status.error_message().find("99"), std::string::npos) << e.status.error_message();
  EXPECT_FALSE(e.has_result);
}

// Issue #15 item 11: EvaluateProgress.compiling.cache_hit was always false.
TEST_F(ExecutorTest, CompilingProgressReportsTheRealCacheOutcome) {
  const std::string src = Variant("/* progress cache test */");
  auto compiling = [](const Evaluation& e) {
    std::vector<bool> hits;
    for (const auto& p : e.progress)
      if (p.has_compiling()) hits.push_back(p.compiling().cache_hit());
    return hits;
  };
  Evaluation a = Evaluate(Request(src));
  Evaluation b = Evaluate(Request(src));
  ASSERT_EQ(a.result.status(), Result::OK) << a.result.message();
  ASSERT_EQ(b.result.status(), Result::OK) << b.result.message();
  EXPECT_EQ(compiling(a), std::vector<bool>{false});
  EXPECT_EQ(compiling(b), std::vector<bool>{true});
  // Still the first message of the stream.
  EXPECT_TRUE(b.progress.front().has_compiling());
  EXPECT_EQ(b.progress.front().compiling().cache_hit(), b.result.compile().cache_hit());
}

// Captures every log line of the executor (installed before it starts, so
// no thread logs while the logger is swapped).
class ExecutorLogTest : public ExecutorTest {
 protected:
  void SetUp() override {
    previous_ = spdlog::default_logger();
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    sink->set_pattern("[%l] %v");
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
    ExecutorTest::SetUp();
  }
  void TearDown() override {
    if (server_) server_->Shutdown(0);
    spdlog::set_default_logger(previous_);
  }
  std::vector<std::string> LogLines() {
    std::vector<std::string> lines;
    std::istringstream in(log_.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> previous_;
};

// Issue #15 item 11: a newline in client_tag forged a line of the
// executor's log. It is refused naming the field; nothing of it is logged.
TEST_F(ExecutorLogTest, ControlCharactersInClientTagAreRefusedAndNeverForgeALogLine) {
  for (const std::string& tag : {std::string("job_1 turn 2\n[error] FORGED executor compromised"),
                                std::string("job_1 turn 2\r[error] FORGED"),
                                std::string("job_1 \x1b[2KFORGED")}) {
    v1::EvaluateRequest req = Request(Variant(""));
    req.set_client_tag(tag);
    Evaluation e = Evaluate(req);
    EXPECT_EQ(e.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << e.status.error_message();
    EXPECT_NE(e.status.error_message().find("client_tag"), std::string::npos)
        << e.status.error_message();
    EXPECT_FALSE(e.has_result);
  }
  // A normal tag is accepted and logged as given.
  v1::EvaluateRequest ok = Request(Variant(""));
  ok.set_client_tag("job_01ABC turn 3");
  Evaluation e = Evaluate(ok);
  EXPECT_EQ(e.result.status(), Result::OK) << e.result.message();
  server_->Shutdown(0);
  bool logged_tag = false;
  for (const std::string& line : LogLines()) {
    EXPECT_EQ(line.rfind("[error] FORGED", 0), std::string::npos) << "forged log line: " << line;
    EXPECT_EQ(line.find("FORGED"), std::string::npos) << line;
    logged_tag = logged_tag || line.find("tag='job_01ABC turn 3'") != std::string::npos;
  }
  EXPECT_TRUE(logged_tag) << log_.str();
}

// Issue #15 item 7: scratch folders left by a killed executor are removed
// when the next one starts; the compile cache and other files stay.
class ExecutorRestartTest : public ExecutorTest {
 protected:
  void SetUp() override {}
};

TEST_F(ExecutorRestartTest, LeftoverScratchFoldersAreRemovedAtStart) {
  ExecutorConfig c = TestConfig(dir_.path());
  ASSERT_TRUE(Finalize(&c, std::string(PKFORGE_BIN_DIR) + "/pkforge-executor").ok());
  auto root = SandboxRoot(c);
  ASSERT_TRUE(root.ok()) << root.status();
  const fs::path r = *root;
  auto write = [](const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  };
  // What kill -9 leaves mid-evaluation and mid-compile.
  write(r / "scratch/eval_01KILLED/candidate.so", "x");
  write(r / "scratch/eval_01KILLED/rank1/out.bin", std::string(4096, 'y'));
  write(r / "scratch/health_01KILLED/log", "x");
  write(r / "compile-work/c-Xy12Zq/candidate.cc", "int x;");
  // Not the executor's runs: kept.
  write(fs::path(c.data_dir) / "operator-notes.txt", "keep me");
  write(fs::path(c.data_dir) / "compile-cache/0123abcd.json", "{}");
  Start(c);
  EXPECT_FALSE(fs::exists(r / "scratch/eval_01KILLED"));
  EXPECT_FALSE(fs::exists(r / "scratch/health_01KILLED"));
  EXPECT_FALSE(fs::exists(r / "compile-work/c-Xy12Zq"));
  EXPECT_TRUE(fs::exists(fs::path(c.data_dir) / "operator-notes.txt"));
  EXPECT_TRUE(fs::exists(fs::path(c.data_dir) / "compile-cache/0123abcd.json"));
  // And it serves.
  Evaluation e = Evaluate(Request(Variant("")));
  EXPECT_EQ(e.result.status(), Result::OK) << e.result.message();
}

// One HTTP/1.0 GET over a real TCP connection; returns the whole response.
std::string HttpGet(const std::string& host, int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "socket failed";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: " + host + "\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<size_t>(n));
    }
  } else {
    out = std::string("connect failed: ") + strerror(errno);
  }
  close(fd);
  return out;
}

// Issue #15, missing test: the Prometheus endpoint over a socket.
class ExecutorMetricsTest : public ExecutorTest {
 protected:
  void SetUp() override {
    ExecutorConfig c = TestConfig(dir_.path());
    c.metrics_listen = "127.0.0.1:0";
    Start(c);
  }
};

TEST_F(ExecutorMetricsTest, MetricsAndHealthzAnswerOverHttp) {
  ASSERT_GT(server_->metrics_port(), 0);
  const std::string health = HttpGet("127.0.0.1", server_->metrics_port(), "/healthz");
  EXPECT_EQ(health.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << health;
  EXPECT_NE(health.find("\r\n\r\nok\n"), std::string::npos) << health;

  Evaluation e = Evaluate(Request(Variant("")));
  ASSERT_EQ(e.result.status(), Result::OK) << e.result.message();
  // The call leaves the in-flight set just after its last message is sent.
  for (int i = 0; i < 200 && server_->service().in_flight() > 0; ++i)
    std::this_thread::sleep_for(10ms);
  const std::string metrics = HttpGet("127.0.0.1", server_->metrics_port(), "/metrics");
  EXPECT_EQ(metrics.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << metrics;
  EXPECT_NE(metrics.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << metrics;
  for (const char* want : {"# TYPE pkforge_executor_evaluations_total counter",
                           "pkforge_executor_evaluations_total{status=\"OK\"} 1",
                           "pkforge_executor_compile_total{cache=\"miss\"} 1",
                           "pkforge_executor_in_flight 0", "pkforge_executor_queue_length 0",
                           "pkforge_executor_usable_gpus 0",
                           "# TYPE pkforge_executor_evaluation_seconds histogram",
                           "pkforge_executor_evaluation_seconds_count 1"})
    EXPECT_NE(metrics.find(want), std::string::npos) << want << "\n" << metrics;
  // Content-Length matches the body.
  const size_t body = metrics.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos);
  const size_t cl = metrics.find("Content-Length: ");
  ASSERT_NE(cl, std::string::npos);
  EXPECT_EQ(std::stoul(metrics.substr(cl + 16)), metrics.size() - body - 4);

  const std::string missing = HttpGet("127.0.0.1", server_->metrics_port(), "/secrets");
  EXPECT_EQ(missing.rfind("HTTP/1.1 404", 0), 0u) << missing;
}

// The first non-loopback IPv4 address of this host, or "" when it has none.
std::string NonLoopbackIpv4() {
  FILE* p = popen("hostname -I 2>/dev/null", "r");
  if (p == nullptr) return "";
  char buf[512] = {};
  const bool got = fgets(buf, sizeof buf, p) != nullptr;
  pclose(p);
  if (!got) return "";
  std::istringstream in(buf);
  for (std::string a; in >> a;)
    if (a.find('.') != std::string::npos && a.rfind("127.", 0) != 0) return a;
  return "";
}

// Issue #15, missing test: bearer tokens on a non-loopback listener, dialled
// through a non-loopback address (a real remote-style peer), every RPC.
TEST_F(ExecutorTokenTest, NonLoopbackPeersNeedTheTokenOnEveryRpc) {
  const std::string ip = NonLoopbackIpv4();
  if (ip.empty()) GTEST_SKIP() << "this host has no non-loopback IPv4 address";
  const std::string token = "an-operator-token-0123456789";
  const std::string token_file = dir_.path() + "/token";
  std::ofstream(token_file) << token << "\n";
  ExecutorConfig c = TestConfig(dir_.path());
  c.listen = ip + ":0";
  c.token_file = token_file;
  Start(c);
  EXPECT_EQ(server_->address().rfind(ip + ":", 0), 0u) << server_->address();
  auto stub = v1::Executor::NewStub(grpc::CreateChannel(server_->address(),
                                                        grpc::InsecureChannelCredentials()));
  for (const std::string& auth : {std::string(""), std::string("Bearer"), std::string("Bearer "),
                                 "Bearer " + token + "x", "bearer " + token, token,
                                 "Basic " + token}) {
    grpc::ClientContext c1, c2, c3;
    if (!auth.empty()) {
      c1.AddMetadata("authorization", auth);
      c2.AddMetadata("authorization", auth);
      c3.AddMetadata("authorization", auth);
    }
    v1::ListProblemsResponse problems;
    grpc::Status s = stub->ListProblems(&c1, v1::ListProblemsRequest(), &problems);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << "'" << auth << "'";
    EXPECT_EQ(s.error_message().find(token), std::string::npos);
    v1::DeviceInfo info;
    EXPECT_EQ(stub->DescribeDevice(&c2, v1::DescribeDeviceRequest(), &info).error_code(),
              grpc::StatusCode::UNAUTHENTICATED) << "'" << auth << "'";
    auto reader = stub->Evaluate(&c3, Request(Variant("")));
    v1::EvaluateProgress msg;
    int messages = 0;
    while (reader->Read(&msg)) ++messages;
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED) << "'" << auth << "'";
    EXPECT_EQ(messages, 0);
  }
  EXPECT_EQ(server_->metrics().Get("pkforge_executor_evaluations_total", "status=\"OK\""), 0);
  grpc::ClientContext good1, good2;
  good1.AddMetadata("authorization", "Bearer " + token);
  good2.AddMetadata("authorization", "Bearer " + token);
  v1::DeviceInfo info;
  EXPECT_TRUE(stub->DescribeDevice(&good1, v1::DescribeDeviceRequest(), &info).ok());
  auto reader = stub->Evaluate(&good2, Request(Variant("")));
  v1::EvaluateProgress msg;
  Result result;
  while (reader->Read(&msg))
    if (msg.has_result()) result = msg.result();
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(result.status(), Result::OK) << result.message();
}

TEST(ExecutorBinary, RefusesNonLoopbackWithoutToken) {
  const std::string cmd = std::string(PKFORGE_BIN_DIR) +
                          "/pkforge-executor --listen 0.0.0.0:0 --gpus none --no-measure 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int rc = pclose(p);
  EXPECT_EQ(WEXITSTATUS(rc), 2) << out;
  EXPECT_NE(out.find("token"), std::string::npos) << out;
}

}  // namespace
}  // namespace pkforge::executor
