// GPU promise: NVIDIA device nodes appear inside only with policy.gpu /
// --gpu, and with it a CUDA program runs. ctest label `gpu`.
//
// The absence half runs everywhere (CI included). The CUDA half skips
// cleanly (GTEST_SKIP) without /dev/nvidia0 or nvcc, and runs on the GPU
// machine: nvcc compiles inside a sandbox without GPU access (the executor's
// compile phase), then the binary runs in a sandbox with --gpu.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/sandbox_test_util.h"

namespace pkforge::sandbox {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace ::pkforge::sandbox::testing;  // NOLINT: test helpers

#ifdef PKF_NVCC
constexpr const char* kNvcc = PKF_NVCC;
#else
constexpr const char* kNvcc = "";
#endif

constexpr const char* kCudaSource = R"(
#include <cstdio>
#include <cuda_runtime.h>
__global__ void Add(const int* a, const int* b, int* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
int main() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  std::printf("device_count=%d\ncuda_status=%s\n", count, cudaGetErrorName(e));
  if (e != cudaSuccess || count == 0) return 3;
  const int n = 1 << 16;
  int *a, *b, *c;
  cudaMalloc(&a, n * sizeof(int));
  cudaMalloc(&b, n * sizeof(int));
  cudaMalloc(&c, n * sizeof(int));
  int* h = new int[n];
  for (int i = 0; i < n; ++i) h[i] = i;
  cudaMemcpy(a, h, n * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemcpy(b, h, n * sizeof(int), cudaMemcpyHostToDevice);
  Add<<<(n + 255) / 256, 256>>>(a, b, c, n);
  cudaMemcpy(h, c, n * sizeof(int), cudaMemcpyDeviceToHost);
  long long sum = 0;
  for (int i = 0; i < n; ++i) sum += h[i];
  std::printf("kernel_status=%s\nsum=%lld\n", cudaGetErrorName(cudaGetLastError()), sum);
  return 0;
}
)";

bool HostHasGpu() { return FileExists("/dev/nvidia0"); }

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sandbox_ = TestSandbox();
    ASSERT_NE(sandbox_, nullptr);
    scratch_ = dir_.MakeDir("scratch");
  }
  SandboxPolicy Policy(bool gpu) const {
    SandboxPolicy p = ProbePolicy(scratch_);
    p.gpu = gpu;
    p.env = {"PATH=/usr/local/cuda/bin:/usr/bin:/bin", "HOME=/tmp"};
    // Container images often reach libcuda only through LD_LIBRARY_PATH. The
    // environment is never inherited, so (like the executor) pass it on
    // explicitly: it names library directories, not secrets.
    if (const char* ld = getenv("LD_LIBRARY_PATH"))
      p.env.push_back(std::string("LD_LIBRARY_PATH=") + ld);
    p.timeout_ms = 240'000;
    // Without a writable memory cgroup a GPU run cannot be memory-capped
    // (RLIMIT_AS breaks CUDA); the executor decides, here we do not cap.
    p.max_memory_mb = 0;
    return p;
  }
  TempDir dir_;
  std::unique_ptr<Sandbox> sandbox_;
  std::string scratch_;
};

TEST_F(GpuTest, NoDeviceNodesWithoutGpuFlag) {
  auto r = sandbox_->Run({"/bin/sh", "-c", "ls -a /dev; ls /sys 2>&1 | head -1"}, Policy(false));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->stdout_data, Not(HasSubstr("nvidia")));
  EXPECT_THAT(r->stdout_data, HasSubstr("null"));
  EXPECT_THAT(r->stdout_data, HasSubstr("No such file"));  // no /sys either
  CliRun cli = RunCli({"--scratch", scratch_, "--memory-mb", "0", "--", "/bin/ls", "/dev"});
  EXPECT_EQ(cli.rc, 0) << cli.err;
  EXPECT_THAT(cli.out, Not(HasSubstr("nvidia")));
}

TEST_F(GpuTest, DeviceNodesAppearWithGpuFlag) {
  if (!HostHasGpu()) GTEST_SKIP() << "no /dev/nvidia0 on this host";
  auto r = sandbox_->Run({"/bin/ls", "/dev"}, Policy(true));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->stdout_data, HasSubstr("nvidia0"));
  EXPECT_THAT(r->stdout_data, HasSubstr("nvidiactl"));
  CliRun cli =
      RunCli({"--scratch", scratch_, "--memory-mb", "0", "--gpu", "--", "/bin/ls", "/dev"});
  EXPECT_EQ(cli.rc, 0) << cli.err;
  EXPECT_THAT(cli.out, HasSubstr("nvidia0"));
}

TEST_F(GpuTest, CudaProgramRunsOnlyWithGpuFlag) {
  if (!HostHasGpu()) GTEST_SKIP() << "no /dev/nvidia0 on this host";
  if (std::string(kNvcc).empty() || !FileExists(kNvcc)) GTEST_SKIP() << "nvcc not found";
  WriteFile(scratch_ + "/add.cu", kCudaSource);
  // Compile phase: no GPU access needed (or given).
  auto compile = sandbox_->Run({kNvcc, "-O2", "-o", "add", "add.cu"}, Policy(false));
  ASSERT_TRUE(compile.ok()) << compile.status();
  ASSERT_EQ(compile->exit_code, 0) << compile->stdout_data << compile->stderr_data;

  auto run = sandbox_->Run({scratch_ + "/add"}, Policy(true));
  ASSERT_TRUE(run.ok()) << run.status();
  std::printf("GPU run inside the sandbox:\n%s%s[enforcement: %s]\n", run->stdout_data.c_str(),
              run->stderr_data.c_str(), run->enforcement.c_str());
  EXPECT_EQ(run->exit_code, 0) << run->stdout_data << run->stderr_data;
  EXPECT_EQ(Value(run->stdout_data, "kernel_status"), "cudaSuccess");
  // sum of 2*i for i < 65536
  EXPECT_EQ(Value(run->stdout_data, "sum"), std::to_string(2LL * (65536LL * 65535 / 2)));

  // Same binary without --gpu: no device.
  auto denied = sandbox_->Run({scratch_ + "/add"}, Policy(false));
  ASSERT_TRUE(denied.ok()) << denied.status();
  EXPECT_NE(denied->exit_code, 0);
  EXPECT_THAT(Value(denied->stdout_data, "device_count"), "0");

  // And through the CLI.
  CliRun cli =
      RunCli({"--scratch", scratch_, "--memory-mb", "0", "--gpu", "--", scratch_ + "/add"});
  EXPECT_EQ(cli.rc, 0) << cli.out << cli.err;
  EXPECT_THAT(cli.out, HasSubstr("kernel_status=cudaSuccess"));
}

}  // namespace
}  // namespace pkforge::sandbox
