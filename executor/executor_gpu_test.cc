// The executor end to end on the cuda backend (ctest label gpu): a real
// ExecutorServer with every GPU of the machine, measured ceilings, sandboxed
// nvcc and pkforge-worker/pkforge-cuda-rank, over real gRPC. Skips cleanly
// without a GPU (no /dev/nvidia0) or without the cuda build.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "absl/strings/str_replace.h"
#include "executor/server.h"
#include "pkforge/v1/executor.grpc.pb.h"

namespace pkforge::executor {
namespace {

namespace fs = std::filesystem;
using Result = v1::EvaluationResult;

// Self-contained f32 allreduce for the cuda backend: every rank copies x into
// its symmetric scratch, meets its peers, and sums every rank's copy.
constexpr const char* kCudaAllreduce = R"(#include "pkforge/candidate.h"
#include <cuda_runtime.h>
struct Peers { const float* p[8]; };
__global__ void sum(Peers x, int w, float* y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    float s = 0;
    for (int j = 0; j < w; ++j) s += x.p[j][i];
    /*BODY*/
    y[i] = s;
  }
}
extern "C" int pkf_setup(pkf_context*) { return 0; }
extern "C" void pkf_teardown(pkf_context*) {}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t, void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  long long n = 1;
  for (int i = 0; i < in[0].ndim; ++i) n *= in[0].shape[i];
  if (cudaMemcpyAsync(ctx->peer_scratch[ctx->rank], in[0].data, n * sizeof(float), cudaMemcpyDeviceToDevice, s) != cudaSuccess) return 2;
  if (cudaStreamSynchronize(s) != cudaSuccess) return 3;
  if (ctx->barrier(ctx)) return 1;
  Peers x = {};
  for (int j = 0; j < ctx->world_size && j < 8; ++j) x.p[j] = (const float*)ctx->peer_scratch[j];
  long long blocks = (n + 255) / 256;
  sum<<<blocks > 1024 ? 1024 : (int)blocks, 256, 0, s>>>(x, ctx->world_size, (float*)out[0].data, n);
  if (cudaStreamSynchronize(s) != cudaSuccess) return 4;
  return ctx->barrier(ctx);
}
)";

std::string Variant(const std::string& body) { return absl::StrReplaceAll(kCudaAllreduce, {{"/*BODY*/", body}}); }

bool HaveGpu() { return access("/dev/nvidia0", F_OK) == 0; }

class ExecutorGpuTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveGpu() || access((std::string(PKFORGE_BIN_DIR) + "/pkforge-cuda-rank").c_str(), X_OK) != 0)
      return;
    char tmpl[] = "/tmp/pkf_executor_gpu_XXXXXX";
    dir_ = new std::string(mkdtemp(tmpl));
    ExecutorConfig c;
    c.listen = "127.0.0.1:0";
    c.data_dir = *dir_ + "/data";
    c.gpus = "all";
    c.measure_ceilings = true;
    c.default_timeout_s = 30;
    c.worker_path = std::string(PKFORGE_BIN_DIR) + "/pkforge-worker";
    auto st = Finalize(&c, std::string(PKFORGE_BIN_DIR) + "/pkforge-executor");
    if (!st.ok()) {
      std::cerr << "Finalize: " << st << "\n";
      return;
    }
    auto s = ExecutorServer::Start(c);
    if (!s.ok()) {
      std::cerr << "ExecutorServer::Start: " << s.status() << "\n";
      start_error_ = new std::string(s.status().ToString());
      return;
    }
    server_ = s->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    if (dir_ != nullptr) {
      std::error_code ec;
      fs::remove_all(*dir_, ec);
    }
  }
  void SetUp() override {
    if (!HaveGpu()) GTEST_SKIP() << "no GPU (/dev/nvidia0)";
    if (access((std::string(PKFORGE_BIN_DIR) + "/pkforge-cuda-rank").c_str(), X_OK) != 0)
      GTEST_SKIP() << "built without the cuda backend";
    ASSERT_NE(server_, nullptr) << (start_error_ ? *start_error_ : "server did not start");
    stub_ = v1::Executor::NewStub(grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  Result Evaluate(const v1::EvaluateRequest& req, grpc::Status* status = nullptr) {
    grpc::ClientContext ctx;
    auto reader = stub_->Evaluate(&ctx, req);
    v1::EvaluateProgress msg;
    Result r;
    while (reader->Read(&msg))
      if (msg.has_result()) r = msg.result();
    grpc::Status s = reader->Finish();
    if (status != nullptr) *status = s;
    else EXPECT_TRUE(s.ok()) << s.error_message();
    return r;
  }

  static v1::EvaluateRequest Request(const std::string& source) {
    v1::EvaluateRequest r;
    r.set_problem("allreduce");
    r.set_backend(v1::BACKEND_CUDA);
    r.set_world_size(1);
    r.set_dtype(v1::DTYPE_F32);
    r.mutable_size()->set_preset("tiny");
    r.set_source(source);
    r.set_trials(2);
    r.set_timeout_s(20);
    return r;
  }

  static std::string* dir_;
  static std::string* start_error_;
  static ExecutorServer* server_;
  std::unique_ptr<v1::Executor::Stub> stub_;
};
std::string* ExecutorGpuTest::dir_ = nullptr;
std::string* ExecutorGpuTest::start_error_ = nullptr;
ExecutorServer* ExecutorGpuTest::server_ = nullptr;

TEST_F(ExecutorGpuTest, DescribeDeviceFiguresAreSane) {
  grpc::ClientContext ctx;
  v1::DeviceInfo info;
  ASSERT_TRUE(stub_->DescribeDevice(&ctx, v1::DescribeDeviceRequest(), &info).ok());
  std::cout << "DescribeDevice: " << info.DebugString() << "\n";
  ASSERT_GE(info.gpus_size(), 1);
  EXPECT_EQ(info.usable_gpus(), info.gpus_size());
  EXPECT_EQ(info.backends_size(), 2);
  EXPECT_EQ(info.ceilings().source(), "measured");
  EXPECT_FALSE(info.nccl_version().empty());
  EXPECT_FALSE(info.driver_version().empty());
  EXPECT_FALSE(info.cuda_toolkit_version().empty());
  EXPECT_EQ(info.sandbox().mode(), "bubblewrap");
  if (info.gpus(0).name().find("H200") != std::string::npos) {
    EXPECT_NEAR(info.ceilings().hbm_gbps(), 4300, 0.2 * 4300);
    EXPECT_GT(info.ceilings().bf16_tflops(), 300);
  } else {
    EXPECT_GT(info.ceilings().hbm_gbps(), 100);
  }
  for (const auto& g : info.gpus()) EXPECT_TRUE(g.healthy()) << g.index();
}

TEST_F(ExecutorGpuTest, OkCompileErrorWrongOutputOnCuda) {
  Result ok = Evaluate(Request(Variant("")));
  EXPECT_EQ(ok.status(), Result::OK) << ok.DebugString();
  EXPECT_TRUE(ok.has_speedup());
  EXPECT_GT(ok.device_state().gpus_size(), 0);
  std::cout << "cuda OK: compile " << ok.stages().compile_ms() << " ms, queue " << ok.stages().queue_ms()
            << " ms, run " << ok.stages().run_ms() << " ms, total " << ok.stages().total_ms()
            << " ms; speedup " << ok.speedup() << "\n";

  Result ce = Evaluate(Request("#include \"pkforge/candidate.h\"\n__global__ void k( { }\n"));
  EXPECT_EQ(ce.status(), Result::COMPILE_ERROR);
  EXPECT_NE(ce.compile().output().find("error"), std::string::npos);

  Result wrong = Evaluate(Request(Variant("if (i == 5) s += 1.0f;")));
  ASSERT_EQ(wrong.status(), Result::WRONG_OUTPUT) << wrong.message();
  ASSERT_GT(wrong.correctness().checks_size(), 0);
  EXPECT_EQ(wrong.correctness().checks(0).first_mismatch_index(), 5);
}

TEST_F(ExecutorGpuTest, CrashAndHangEndInResultsAndTheGpuStaysHealthy) {
  Result crash = Evaluate(Request(Variant("if (i == 0) *(volatile float*)(0x10) = s;")));
  EXPECT_EQ(crash.status(), Result::RUNTIME_ERROR) << crash.DebugString();
  // clock64() is a volatile read the compiler cannot drop: a real hang.
  v1::EvaluateRequest hang = Request(Variant("if (i == 0) { while (clock64() > 0) {} }"));
  hang.set_timeout_s(5);
  Result t = Evaluate(hang);
  EXPECT_EQ(t.status(), Result::TIMEOUT) << t.DebugString();
  // The health check ran after each and the GPU is still in the pool.
  grpc::ClientContext ctx;
  v1::DeviceInfo info;
  ASSERT_TRUE(stub_->DescribeDevice(&ctx, v1::DescribeDeviceRequest(), &info).ok());
  EXPECT_EQ(info.usable_gpus(), info.gpus_size());
  Result ok = Evaluate(Request(Variant("/* after crash */")));
  EXPECT_EQ(ok.status(), Result::OK) << ok.message();
}

TEST_F(ExecutorGpuTest, SanitizerReportIsPresentAndFindsOutOfBounds) {
  v1::EvaluateRequest m = Request(Variant("/* sanitized */"));
  m.set_sanitize(v1::SANITIZER_MEMCHECK);
  grpc::Status st;
  Result clean = Evaluate(m, &st);
  if (st.error_code() == grpc::StatusCode::FAILED_PRECONDITION)
    GTEST_SKIP() << "compute-sanitizer unavailable on this host: " << st.error_message();
  ASSERT_TRUE(clean.has_sanitizer());
  std::cout << "memcheck clean: errors=" << clean.sanitizer().errors() << " error='"
            << clean.sanitizer().error() << "'\n" << clean.sanitizer().text() << "\n";
  EXPECT_TRUE(clean.sanitizer().error().empty()) << clean.sanitizer().error();
  EXPECT_EQ(clean.sanitizer().errors(), 0);

  // A read 1 TiB past the output: outside every allocation.
  v1::EvaluateRequest oob = Request(Variant("if (i == n - 1) s += y[1LL << 38];"));
  oob.set_sanitize(v1::SANITIZER_MEMCHECK);
  Result dirty = Evaluate(oob);
  ASSERT_TRUE(dirty.has_sanitizer());
  std::cout << "memcheck out-of-bounds: errors=" << dirty.sanitizer().errors() << "\n"
            << dirty.sanitizer().text() << "\n";
  EXPECT_GT(dirty.sanitizer().errors(), 0);
}

TEST_F(ExecutorGpuTest, ProfileSummaryNamesTheCandidatesKernels) {
  v1::EvaluateRequest p = Request(Variant("/* profiled */"));
  p.set_profile(true);
  grpc::Status st;
  Result prof = Evaluate(p, &st);
  if (st.error_code() == grpc::StatusCode::FAILED_PRECONDITION)
    GTEST_SKIP() << "Nsight Compute unavailable on this host: " << st.error_message();
  ASSERT_EQ(prof.status(), Result::OK) << prof.message();
  ASSERT_TRUE(prof.has_profile());
  std::cout << "profile: error='" << prof.profile().error() << "'\n" << prof.profile().text() << "\n";
  EXPECT_TRUE(prof.profile().error().empty()) << prof.profile().error();
  ASSERT_GT(prof.profile().kernels_size(), 0);
  EXPECT_NE(prof.profile().kernels(0).name().find("sum"), std::string::npos);
  EXPECT_GT(prof.profile().kernels(0).duration_us(), 0);
}

TEST_F(ExecutorGpuTest, CacheHitSkipsNvcc) {
  const std::string src = Variant("/* cache */");
  Result a = Evaluate(Request(src));
  Result b = Evaluate(Request(src));
  EXPECT_FALSE(a.compile().cache_hit());
  EXPECT_TRUE(b.compile().cache_hit());
  std::cout << "nvcc compile " << a.compile().compile_ms() << " ms; hit: compile stage "
            << b.stages().compile_ms() << " ms; overhead miss "
            << a.stages().total_ms() - a.stages().compile_ms() - a.stages().queue_ms() - a.stages().run_ms()
            << " ms, hit "
            << b.stages().total_ms() - b.stages().compile_ms() - b.stages().queue_ms() - b.stages().run_ms()
            << " ms\n";
}

}  // namespace
}  // namespace pkforge::executor
