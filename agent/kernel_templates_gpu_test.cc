// GPU correctness of every cuda instantiation of the search space (label
// "gpu": skipped without a usable GPU, run on GPU hosts with
// `ctest -L gpu`). Compiles each problem's instantiations into one library
// and runs agent/testing/cuda_templates_check.cu over them: world sizes 1-4
// (ranks are threads; several share a GPU when there are fewer GPUs than
// ranks), f32/f16/bf16, tails, many chunks, two calls with different inputs.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "agent/kernel_templates.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace pkforge::agent {
namespace {

namespace fs = std::filesystem;

struct CmdResult {
  int code = -1;
  std::string out;
};

CmdResult Sh(const std::string& cmd) {
  CmdResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return r;
}

TEST(KernelTemplatesGpu, EveryCudaInstantiationIsCorrect) {
  const std::string nvcc = PKFORGE_NVCC;
  if (nvcc.empty() || !fs::exists(nvcc)) GTEST_SKIP() << "nvcc not found";
  if (access("/dev/nvidiactl", F_OK) != 0 || access("/dev/nvidia0", F_OK) != 0) {
    GTEST_SKIP() << "no usable GPU";
  }
  const fs::path dir = fs::temp_directory_path() / fmt::format("pkf_templates_gpu_{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string check = (dir / "check").string();
  CmdResult c = Sh(fmt::format("{} -std=c++17 -O2 -I{} {} -o {} -ldl", nvcc,
                               PKFORGE_KERNELS_INCLUDE, PKFORGE_CHECK_SOURCE, check));
  ASSERT_EQ(c.code, 0) << c.out;
  for (const char* p : {"allreduce", "allgather", "reducescatter"}) {
    auto space = SearchSpace(p, v1::BACKEND_CUDA);
    std::string tu;
    for (size_t i = 0; i < space.size(); ++i) {
      GenerateOptions opts;
      opts.symbol_suffix = fmt::format("_v{}", i);
      auto src = GenerateKernel(p, v1::BACKEND_CUDA, space[i], opts);
      ASSERT_TRUE(src.ok()) << src.status();
      tu += *src;
    }
    const fs::path cu = dir / fmt::format("{}.cu", p);
    std::ofstream(cu) << tu;
    const std::string so = (dir / fmt::format("{}.so", p)).string();
    c = Sh(fmt::format("{} -arch=sm_90 -O2 -shared -Xcompiler -fPIC -I{} {} -o {}", nvcc,
                       PKFORGE_KERNELS_INCLUDE, cu.string(), so));
    ASSERT_EQ(c.code, 0) << c.out.substr(0, 8000);
    c = Sh(fmt::format("{} {} {} 0 {}", check, so, p, space.size()));
    EXPECT_EQ(c.code, 0) << c.out;
    std::printf("%s", c.out.c_str());
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pkforge::agent
