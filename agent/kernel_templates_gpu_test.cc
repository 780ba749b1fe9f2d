// GPU correctness of every cuda instantiation of the search space (label
// "gpu": skipped without a usable GPU, run on GPU hosts with
// `ctest -L gpu`). Compiles each problem's instantiations into one library
// and runs agent/testing/cuda_templates_check.cu over them: world sizes 1-4
// (ranks are threads; several share a GPU when there are fewer GPUs than
// ranks), f32/f16/bf16, tails, many chunks, two calls with different inputs.
// The compiles run side by side (the check program, and each problem's
// instantiations in chunks of kChunk, one library each, checked one after
// the other): one after the other they did not finish within 160 s on an
// H100 host (session 20). One library per chunk, not objects linked into
// one: the instantiations share a __global__ barrier kernel per translation
// unit, defined again in each.
// PKF_TEMPLATES_COMPILE_ONLY=1: compile and link everything, run nothing
// (no GPU needed; what a machine without one can check).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

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

// Instantiations per compiled chunk of a problem's library.
constexpr size_t kChunk = 4;

// Runs every command at once, one thread each; results in order.
std::vector<CmdResult> ShAll(const std::vector<std::string>& cmds) {
  std::vector<CmdResult> out(cmds.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cmds.size(); ++i)
    threads.emplace_back([&, i] { out[i] = Sh(cmds[i]); });
  for (auto& t : threads) t.join();
  return out;
}

TEST(KernelTemplatesGpu, EveryCudaInstantiationIsCorrect) {
  const std::string nvcc = PKFORGE_NVCC;
  if (nvcc.empty() || !fs::exists(nvcc)) GTEST_SKIP() << "nvcc not found";
  const char* only = std::getenv("PKF_TEMPLATES_COMPILE_ONLY");
  const bool compile_only = only != nullptr && std::string(only) == "1";
  if (!compile_only &&
      (access("/dev/nvidiactl", F_OK) != 0 || access("/dev/nvidia0", F_OK) != 0)) {
    GTEST_SKIP() << "no usable GPU";
  }
  const fs::path dir = fs::temp_directory_path() / fmt::format("pkf_templates_gpu_{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string check = (dir / "check").string();
  const std::vector<std::string> problems = {"allreduce", "allgather", "reducescatter"};
  // Every compile at once: the check program, then each problem's chunks.
  std::vector<std::string> compiles = {fmt::format("{} -std=c++17 -O2 -I{} {} -o {} -ldl", nvcc,
                                                   PKFORGE_KERNELS_INCLUDE, PKFORGE_CHECK_SOURCE,
                                                   check)};
  struct Chunk {
    std::string problem, so;
    size_t first = 0, count = 0;
  };
  std::vector<Chunk> chunks;
  for (const std::string& p : problems) {
    auto space = SearchSpace(p, v1::BACKEND_CUDA);
    ASSERT_FALSE(space.empty()) << p;
    for (size_t first = 0; first < space.size(); first += kChunk) {
      Chunk ch{p, (dir / fmt::format("{}_{}.so", p, first / kChunk)).string(), first,
               std::min(kChunk, space.size() - first)};
      std::string tu;
      for (size_t i = first; i < first + ch.count; ++i) {
        GenerateOptions opts;
        opts.symbol_suffix = fmt::format("_v{}", i);
        auto src = GenerateKernel(p, v1::BACKEND_CUDA, space[i], opts);
        ASSERT_TRUE(src.ok()) << src.status();
        tu += *src;
      }
      const fs::path cu = dir / fmt::format("{}_{}.cu", p, first / kChunk);
      std::ofstream(cu) << tu;
      compiles.push_back(fmt::format("{} -arch=sm_90 -O2 -shared -Xcompiler -fPIC -I{} {} -o {}",
                                     nvcc, PKFORGE_KERNELS_INCLUDE, cu.string(), ch.so));
      chunks.push_back(std::move(ch));
    }
  }
  const std::vector<CmdResult> built = ShAll(compiles);
  for (size_t i = 0; i < built.size(); ++i)
    ASSERT_EQ(built[i].code, 0) << compiles[i] << "\n" << built[i].out.substr(0, 8000);
  if (!compile_only) {
    for (const Chunk& ch : chunks) {
      const CmdResult c = Sh(fmt::format("{} {} {} {} {}", check, ch.so, ch.problem, ch.first,
                                         ch.count));
      EXPECT_EQ(c.code, 0) << ch.problem << " variants " << ch.first << ".." << ch.first + ch.count
                           << "\n" << c.out;
      std::printf("%s", c.out.c_str());
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pkforge::agent
