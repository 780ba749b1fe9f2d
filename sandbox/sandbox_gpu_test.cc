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

#include <algorithm>
#include <cctype>

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
  for (int d = 0; d < count; ++d) {
    char bus[32] = {0};
    cudaDeviceGetPCIBusId(bus, sizeof bus, d);
    std::printf("pci_bus_id=%s\n", bus);
  }
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

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// The driver's GPUs in PCI order (what sandbox gpus index): their
// /proc/driver/nvidia/gpus directory names, which are PCI addresses.
std::vector<std::string> DriverBusIds() {
  std::vector<std::string> ids;
  if (DIR* d = opendir("/proc/driver/nvidia/gpus")) {
    while (struct dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') ids.push_back(Lower(e->d_name));
    }
    closedir(d);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// "Device Minor:" of the GPU at PCI address `bus`.
std::string DriverMinor(const std::string& bus) {
  std::string info = ReadFileOrEmpty("/proc/driver/nvidia/gpus/" + bus + "/information");
  size_t at = info.find("Device Minor:");
  if (at == std::string::npos) return "";
  size_t begin = info.find_first_of("0123456789", at);
  size_t end = info.find_first_not_of("0123456789", begin);
  return info.substr(begin, end - begin);
}

// /dev/nvidia<digits> names in `listing` (one name per line, as `ls -1`).
std::vector<std::string> GpuNodes(const std::string& listing) {
  std::vector<std::string> nodes;
  std::istringstream in(listing);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > 6 && line.rfind("nvidia", 0) == 0 &&
        line.find_first_not_of("0123456789", 6) == std::string::npos) {
      nodes.push_back(line);
    }
  }
  return nodes;
}

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sandbox_ = TestSandbox();
    ASSERT_NE(sandbox_, nullptr);
    scratch_ = dir_.MakeDir("scratch");
  }
  SandboxPolicy Policy(bool gpu, std::vector<int> gpus = {}) const {
    SandboxPolicy p = ProbePolicy(scratch_);
    p.gpu = gpu;
    p.gpus = std::move(gpus);
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

TEST_F(GpuTest, BadGpuListsAreRefusedNamingTheField) {
  // Runs everywhere: a malformed list, and an index this host lacks, are set-up
  // errors (125) that name --gpus / gpus, never a run with fewer GPUs.
  CliRun bad = RunCli({"--scratch", scratch_, "--memory-mb", "0", "--gpus", "0,x", "--", "/bin/true"});
  EXPECT_EQ(bad.rc, 125);
  EXPECT_THAT(bad.err, HasSubstr("--gpus 0,x"));
  CliRun missing =
      RunCli({"--scratch", scratch_, "--memory-mb", "0", "--gpus", "63", "--", "/bin/true"});
  EXPECT_EQ(missing.rc, 125);
  EXPECT_THAT(missing.err, HasSubstr("gpus:"));
  auto r = sandbox_->Run({"/bin/true"}, Policy(true, {1, 1}));
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
}

TEST_F(GpuTest, OnlyTheAssignedGpuIsPresentAndEnumerated) {
  if (!HostHasGpu()) GTEST_SKIP() << "no /dev/nvidia0 on this host";
  const std::vector<std::string> buses = DriverBusIds();
  ASSERT_FALSE(buses.empty()) << "/dev/nvidia0 but no /proc/driver/nvidia/gpus";
  // The last GPU of the host (GPU 0 on a one-GPU machine): on a multi-GPU
  // host this is the case where inside numbering (0) differs from the host's.
  const int gpu = static_cast<int>(buses.size()) - 1;
  const std::string minor = DriverMinor(buses[static_cast<size_t>(gpu)]);
  ASSERT_FALSE(minor.empty());

  auto r = sandbox_->Run({"/bin/ls", "-1", "/dev", "/dev/nvidia-caps"}, Policy(true, {gpu}));
  ASSERT_TRUE(r.ok()) << r.status();
  std::printf("gpus {%d} (%s, minor %s); /dev inside:\n%s\n", gpu, buses.back().c_str(),
              minor.c_str(), r->stdout_data.c_str());
  EXPECT_EQ(GpuNodes(r->stdout_data), std::vector<std::string>{"nvidia" + minor});
  EXPECT_THAT(r->stdout_data, HasSubstr("nvidiactl"));
  if (FileExists("/dev/nvidia-uvm")) {
    EXPECT_THAT(r->stdout_data, HasSubstr("nvidia-uvm"));
  }

  CliRun cli = RunCli({"--scratch", scratch_, "--memory-mb", "0", "--gpus", std::to_string(gpu),
                       "--", "/bin/ls", "-1", "/dev"});
  EXPECT_EQ(cli.rc, 0) << cli.err;
  EXPECT_EQ(GpuNodes(cli.out), std::vector<std::string>{"nvidia" + minor});

  // What the driver enumerates inside: nvidia-smi (NVML) lists one GPU, the
  // assigned one.
  for (const char* smi : {"/usr/bin/nvidia-smi", "/usr/local/nvidia/bin/nvidia-smi"}) {
    if (!FileExists(smi)) continue;
    SandboxPolicy p = Policy(true, {gpu});
    if (std::string(smi).rfind("/usr/local/nvidia", 0) == 0) p.ro_paths.push_back("/usr/local/nvidia");
    auto smi_run = sandbox_->Run({smi, "-L"}, p);
    ASSERT_TRUE(smi_run.ok()) << smi_run.status();
    std::printf("nvidia-smi -L inside (gpus {%d}):\n%s%s\n", gpu, smi_run->stdout_data.c_str(),
                smi_run->stderr_data.c_str());
    EXPECT_EQ(smi_run->exit_code, 0) << smi_run->stderr_data;
    size_t lines = 0;
    std::istringstream in(smi_run->stdout_data);
    for (std::string line; std::getline(in, line);) lines += line.rfind("GPU ", 0) == 0;
    EXPECT_EQ(lines, 1u) << smi_run->stdout_data;
    break;
  }
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

  // Only the assigned GPU: CUDA sees one device, ordinal 0, and it is the
  // host's GPU with that index (PCI order), also when that index is not 0.
  const std::vector<std::string> buses = DriverBusIds();
  ASSERT_FALSE(buses.empty());
  const int last = static_cast<int>(buses.size()) - 1;
  auto one = sandbox_->Run({scratch_ + "/add"}, Policy(true, {last}));
  ASSERT_TRUE(one.ok()) << one.status();
  std::printf("CUDA inside with gpus {%d}:\n%s%s\n", last, one->stdout_data.c_str(),
              one->stderr_data.c_str());
  EXPECT_EQ(one->exit_code, 0) << one->stdout_data << one->stderr_data;
  EXPECT_EQ(Value(one->stdout_data, "device_count"), "1");
  EXPECT_EQ(Lower(Value(one->stdout_data, "pci_bus_id")), buses.back());
  EXPECT_EQ(Value(one->stdout_data, "kernel_status"), "cudaSuccess");

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
