// The search agent's kernel templates: every instantiation of the search
// space compiles (g++ for host; nvcc, when found, for cuda), and every host
// instantiation computes the right answer for world sizes 1-4, dtypes f32,
// f16 and bf16, tails and data larger than the scratch -- run in a small
// harness that forks one process per rank sharing an mmap'ed scratch segment
// and a process-shared pthread barrier, like the real host backend.
#include "agent/kernel_templates.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/kernel_templates_text.h"
#include "agent/testing/recording_sink.h"
#include "common/ids.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "pkforge/candidate.h"

namespace pkforge::agent {
namespace {

namespace fs = std::filesystem;

const char* kProblems[] = {"allreduce", "allgather", "reducescatter"};

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

void WriteFile(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / fmt::format("pkf_templates_{}", getpid());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string NvccPath() {
  std::string nvcc = PKFORGE_NVCC;
  if (nvcc.empty() && fs::exists("/usr/local/cuda/bin/nvcc")) nvcc = "/usr/local/cuda/bin/nvcc";
  return nvcc;
}

TEST(KernelTemplates, SpacesAreNonEmptyDistinctAndGenerate) {
  for (v1::Backend b : {v1::BACKEND_HOST, v1::BACKEND_CUDA}) {
    for (const char* p : kProblems) {
      auto space = SearchSpace(p, b);
      ASSERT_GE(space.size(), 8u) << p;
      std::set<std::string> described, sources;
      for (const auto& k : space) {
        described.insert(k.Describe(b));
        auto src = GenerateKernel(p, b, k);
        ASSERT_TRUE(src.ok()) << src.status();
        EXPECT_NE(src->find("pkf_run("), std::string::npos);
        EXPECT_EQ(src->find('@'), std::string::npos) << "unsubstituted token in " << k.Describe(b);
        sources.insert(*src);
      }
      EXPECT_EQ(described.size(), space.size()) << p;
      EXPECT_EQ(sources.size(), space.size()) << p;
    }
  }
  EXPECT_TRUE(SearchSpace("alltoall", v1::BACKEND_CUDA).empty());
  KernelParams k;
  k.algorithm = "nonsense";
  EXPECT_FALSE(GenerateKernel("allreduce", v1::BACKEND_HOST, k).ok());
  k = SearchSpace("allreduce", v1::BACKEND_CUDA)[0];
  k.vec_bytes = 3;
  EXPECT_FALSE(GenerateKernel("allreduce", v1::BACKEND_CUDA, k).ok());
}

// The templates are files under agent/templates/ (README.md there), embedded
// at build time: every file there is embedded (a file left out of
// PKFORGE_KERNEL_TEMPLATES would silently never be used), and the embedded
// text is the file's.
TEST(KernelTemplates, EveryTemplateFileIsEmbeddedAsItIs) {
  const fs::path root = PKFORGE_TEMPLATES_DIR;
  std::set<std::string> on_disk, embedded;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".cu" || ext == ".cuh" || ext == ".cc" || ext == ".h")) {
      on_disk.insert(fs::relative(e.path(), root).string());
    }
  }
  for (const KernelTemplateFile& f : kKernelTemplateFiles) {
    embedded.insert(std::string(f.name));
    std::ifstream in(root / std::string(f.name), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, f.text) << f.name;
  }
  EXPECT_EQ(on_disk, embedded);
}

// The preludes are complete headers: compiled on their own, as code (the
// variants and bodies are compiled in every instantiation below).
TEST(KernelTemplates, PreludesCompileOnTheirOwn) {
  const fs::path root = PKFORGE_TEMPLATES_DIR;
  CmdResult host = Sh(fmt::format(
      "{} -std=c++20 -fsyntax-only -Wall -Wextra -Werror -x c++ -I{} {}", PKFORGE_CXX,
      PKFORGE_KERNELS_INCLUDE, (root / "host_prelude.h").string()));
  EXPECT_EQ(host.code, 0) << host.out;
  const std::string nvcc = NvccPath();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found: the cuda prelude is checked where it is";
  TempDir dir;
  CmdResult cuda = Sh(fmt::format("{} -std=c++17 -x cu -c -I{} {} -o {}", nvcc,
                                  PKFORGE_KERNELS_INCLUDE, (root / "cuda_prelude.cuh").string(),
                                  (dir.path() / "prelude.o").string()));
  EXPECT_EQ(cuda.code, 0) << cuda.out;
}

// ------------------------------------------------------ host harness ----

float Bf16ToF32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t F32ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);  // test values are finite
  return static_cast<uint16_t>(u >> 16);
}

// Element i of rank r's input, as float; exactly representable in the dtype.
float InputValue(pkf_dtype dt, int iter, int rank, int64_t i) {
  float v = std::sin(0.37f * static_cast<float>(i) + 1.7f * static_cast<float>(rank) +
                     0.5f * static_cast<float>(iter)) *
            4.0f;
  if (dt == PKF_F16) return static_cast<float>(static_cast<_Float16>(v));
  if (dt == PKF_BF16) return Bf16ToF32(F32ToBf16(v));
  return v;
}

size_t ElemSize(pkf_dtype dt) { return dt == PKF_F32 ? 4 : 2; }

void Store(pkf_dtype dt, void* base, int64_t i, float v) {
  if (dt == PKF_F32) {
    static_cast<float*>(base)[i] = v;
  } else if (dt == PKF_F16) {
    _Float16 h = static_cast<_Float16>(v);
    std::memcpy(static_cast<char*>(base) + 2 * i, &h, 2);
  } else {
    const uint16_t b = F32ToBf16(v);
    std::memcpy(static_cast<char*>(base) + 2 * i, &b, 2);
  }
}

float Load(pkf_dtype dt, const void* base, int64_t i) {
  if (dt == PKF_F32) return static_cast<const float*>(base)[i];
  uint16_t u;
  std::memcpy(&u, static_cast<const char*>(base) + 2 * i, 2);
  if (dt == PKF_F16) {
    _Float16 h;
    std::memcpy(&h, &u, 2);
    return static_cast<float>(h);
  }
  return Bf16ToF32(u);
}

pthread_barrier_t* g_barrier = nullptr;

int HarnessBarrier(const pkf_context*) {
  const int rc = pthread_barrier_wait(g_barrier);
  return (rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD) ? 0 : 1;
}

constexpr int kIters = 2;  // two calls with different inputs: no state may leak between calls

// Runs the candidate `so` on `world` forked ranks; returns "" when every
// output of both calls matches the plain sum/concatenation.
std::string RunHost(const std::string& so, const std::string& symbol, const std::string& problem,
                    pkf_dtype dt, int world, int64_t n, uint64_t scratch_bytes) {
  const int64_t in_n = problem == "reducescatter" ? world * n : n;
  const int64_t out_n = problem == "allgather" ? world * n : n;
  const size_t es = ElemSize(dt);
  const uint64_t flag_count = 64;
  const size_t barrier_bytes = 256;
  const size_t scratch_total = world * scratch_bytes;
  const size_t flags_total = world * flag_count * 4;
  const size_t out_total = static_cast<size_t>(kIters) * world * out_n * es;
  const size_t bytes =
      barrier_bytes + scratch_total + flags_total + out_total + world * sizeof(int);
  char* shm = static_cast<char*>(
      mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (shm == MAP_FAILED) return "mmap failed";
  std::memset(shm, 0, bytes);
  auto* barrier = reinterpret_cast<pthread_barrier_t*>(shm);
  pthread_barrierattr_t attr;
  pthread_barrierattr_init(&attr);
  pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(barrier, &attr, world);
  char* scratch = shm + barrier_bytes;
  auto* flags = reinterpret_cast<uint32_t*>(scratch + scratch_total);
  char* outs = reinterpret_cast<char*>(flags) + flags_total;
  int* rcs = reinterpret_cast<int*>(outs + out_total);

  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(20);  // a deadlocked candidate must not hang the test
      g_barrier = barrier;
      void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h == nullptr) _exit(3);
      auto run = reinterpret_cast<pkf_run_fn>(dlsym(h, symbol.c_str()));
      if (run == nullptr) _exit(4);
      std::vector<void*> peer_scratch(world);
      std::vector<uint32_t*> peer_flags(world);
      for (int p = 0; p < world; ++p) {
        peer_scratch[p] = scratch + p * scratch_bytes;
        peer_flags[p] = flags + p * flag_count;
      }
      pkf_context ctx{};
      ctx.rank = r;
      ctx.world_size = world;
      ctx.peer_scratch = peer_scratch.data();
      ctx.scratch_bytes = scratch_bytes;
      ctx.peer_flags = peer_flags.data();
      ctx.flag_count = flag_count;
      ctx.barrier = HarnessBarrier;
      if (auto setup = reinterpret_cast<pkf_setup_fn>(dlsym(h, "pkf_setup"))) {
        if (setup(&ctx) != 0) _exit(5);
      }
      std::vector<char> in_buf(in_n * es + 1), out_buf(out_n * es + 1);
      for (int it = 0; it < kIters; ++it) {
        for (int64_t i = 0; i < in_n; ++i) Store(dt, in_buf.data(), i, InputValue(dt, it, r, i));
        std::memset(out_buf.data(), 0xff, out_buf.size());  // poison (NaN)
        pkf_tensor tin{in_buf.data(), dt, 1, {in_n}};
        pkf_tensor tout{out_buf.data(), dt, 1, {out_n}};
        const int rc = run(&ctx, &tin, 1, &tout, 1, nullptr);
        if (rc != 0) {
          rcs[r] = rc;
          _exit(0);
        }
        std::memcpy(outs + (static_cast<size_t>(it) * world + r) * out_n * es, out_buf.data(),
                    out_n * es);
      }
      _exit(0);
    }
    pids.push_back(pid);
  }
  std::string err;
  for (int r = 0; r < world; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      err += fmt::format("rank {} died (status {:#x}); ", r, status);
    } else if (rcs[r] != 0) {
      err += fmt::format("rank {} pkf_run returned {}; ", r, rcs[r]);
    }
  }
  const float atol = dt == PKF_F32 ? 1e-5f : dt == PKF_F16 ? 1e-3f : 1e-2f;
  const float rtol = atol;
  for (int it = 0; it < kIters && err.empty(); ++it) {
    for (int r = 0; r < world && err.empty(); ++r) {
      const char* got = outs + (static_cast<size_t>(it) * world + r) * out_n * es;
      for (int64_t i = 0; i < out_n; ++i) {
        float want = 0;
        if (problem == "allgather") {
          want = InputValue(dt, it, static_cast<int>(i / n), i % n);
        } else {
          const int64_t src_i = problem == "reducescatter" ? r * n + i : i;
          for (int s = 0; s < world; ++s) want += InputValue(dt, it, s, src_i);
        }
        // Round the expectation to the dtype like the kernel's final store.
        std::vector<char> tmp(4);
        Store(dt, tmp.data(), 0, want);
        want = Load(dt, tmp.data(), 0);
        const float g = Load(dt, got, i);
        if (!(std::fabs(g - want) <= atol + rtol * std::fabs(want))) {
          err = fmt::format("call {} rank {} element {}: expected {}, got {}", it, r, i, want, g);
          break;
        }
      }
    }
  }
  pthread_barrier_destroy(barrier);
  munmap(shm, bytes);
  return err;
}

struct Variant {
  std::string problem;
  KernelParams params;
  std::string so;
  std::string symbol;
};

// Compiles `cmds` two at a time (2-core machines); returns the failures.
std::string CompileAll(const std::vector<std::string>& cmds) {
  std::string failures;
  for (size_t i = 0; i < cmds.size(); i += 2) {
    std::vector<std::future<CmdResult>> jobs;
    for (size_t j = i; j < std::min(cmds.size(), i + 2); ++j) {
      jobs.push_back(std::async(std::launch::async, [cmd = cmds[j]] { return Sh(cmd); }));
    }
    for (size_t j = 0; j < jobs.size(); ++j) {
      CmdResult r = jobs[j].get();
      if (r.code != 0) failures += cmds[i + j] + "\n" + r.out.substr(0, 8000) + "\n";
    }
  }
  return failures;
}

TEST(KernelTemplates, EveryHostInstantiationCompilesAndIsCorrect) {
  TempDir dir;
  // One library per problem holding every instantiation (symbols suffixed,
  // the shared prelude emitted once), so the compiler starts 3 times instead
  // of 40; the harness calls each instantiation's own pkf_run_v<i>. One
  // unsuffixed file checks the standalone form (HostTemplateReportsTooSmallScratch).
  std::vector<Variant> all;
  std::vector<std::string> cmds;
  for (const char* p : kProblems) {
    auto space = SearchSpace(p, v1::BACKEND_HOST);
    std::string tu;
    const std::string so = (dir.path() / fmt::format("{}_all.so", p)).string();
    for (size_t i = 0; i < space.size(); ++i) {
      GenerateOptions opts;
      opts.symbol_suffix = fmt::format("_v{}", i);
      auto src = GenerateKernel(p, v1::BACKEND_HOST, space[i], opts);
      ASSERT_TRUE(src.ok()) << src.status();
      tu += *src;
      all.push_back({p, space[i], so, "pkf_run" + opts.symbol_suffix});
    }
    const fs::path cc = dir.path() / fmt::format("{}_all.cc", p);
    WriteFile(cc, tu);
    cmds.push_back(
        fmt::format("{} -std=c++20 -O1 -shared -fPIC -Wall -Wextra -Werror -I{} {} -o {}",
                    PKFORGE_CXX, PKFORGE_KERNELS_INCLUDE, cc.string(), so));
  }
  ASSERT_EQ(CompileAll(cmds), "");  // all compiling happens before any fork
  // World sizes 1-4; many chunks and tails (small scratch, odd numel) and a
  // single chunk (scratch larger than the data).
  struct Case {
    int64_t n;
    uint64_t scratch;
  };
  const Case cases[] = {{1237, 4096}, {5, 1 << 16}};
  int runs = 0;
  for (const auto& v : all) {
    for (pkf_dtype dt : {PKF_F32, PKF_F16, PKF_BF16}) {
      for (int world = 1; world <= 4; ++world) {
        for (const auto& cs : cases) {
          const std::string err = RunHost(v.so, v.symbol, v.problem, dt, world, cs.n, cs.scratch);
          ASSERT_EQ(err, "") << v.problem << " " << v.params.Describe(v1::BACKEND_HOST) << " dtype "
                             << dt << " world " << world << " n " << cs.n << " scratch "
                             << cs.scratch;
          ++runs;
        }
      }
    }
  }
  EXPECT_EQ(runs, static_cast<int>(all.size()) * 3 * 4 * 2);
}

TEST(KernelTemplates, HostTemplateReportsTooSmallScratch) {
  TempDir dir;
  KernelParams k = SearchSpace("reducescatter", v1::BACKEND_HOST)[0];
  auto src = GenerateKernel("reducescatter", v1::BACKEND_HOST, k);
  ASSERT_TRUE(src.ok());
  WriteFile(dir.path() / "rs.cc", *src);
  const std::string so = (dir.path() / "rs.so").string();
  auto r = Sh(fmt::format("{} -std=c++20 -O2 -shared -fPIC -I{} {} -o {}", PKFORGE_CXX,
                          PKFORGE_KERNELS_INCLUDE, (dir.path() / "rs.cc").string(), so));
  ASSERT_EQ(r.code, 0) << r.out;
  // 4 ranks x 64-byte slots need 256 bytes; 128 cannot hold one slot each.
  EXPECT_NE(RunHost(so, "pkf_run", "reducescatter", PKF_F32, 4, 100, 128).find("returned 3"),
            std::string::npos);
}

// At world size 1 every problem here is y = x: a template must copy directly,
// without staging through the scratch or meeting at a barrier (the expert's
// special case; at world size 1 NCCL does the same). With no scratch at all,
// a template that still stages would fail with "returned 3" (no scratch).
TEST(KernelTemplates, WorldSizeOneCopiesWithoutScratchOrBarrier) {
  TempDir dir;
  for (const char* p : kProblems) {
    KernelParams k = SearchSpace(p, v1::BACKEND_HOST)[0];
    auto src = GenerateKernel(p, v1::BACKEND_HOST, k);
    ASSERT_TRUE(src.ok()) << src.status();
    const fs::path cc = dir.path() / fmt::format("{}_solo.cc", p);
    WriteFile(cc, *src);
    const std::string so = (dir.path() / fmt::format("{}_solo.so", p)).string();
    auto r = Sh(fmt::format("{} -std=c++20 -O2 -shared -fPIC -I{} {} -o {}", PKFORGE_CXX,
                            PKFORGE_KERNELS_INCLUDE, cc.string(), so));
    ASSERT_EQ(r.code, 0) << r.out;
    for (pkf_dtype dt : {PKF_F32, PKF_BF16}) {
      EXPECT_EQ(RunHost(so, "pkf_run", p, dt, 1, 1237, 0), "") << p << " dtype " << dt;
    }
    // The same template still needs its scratch with peers.
    EXPECT_NE(RunHost(so, "pkf_run", p, PKF_F32, 2, 1237, 0).find("returned 3"),
              std::string::npos)
        << p;
    // The cuda form has the same special case, with this variant's copy.
    for (const auto& cuda_params : SearchSpace(p, v1::BACKEND_CUDA)) {
      auto cu = GenerateKernel(p, v1::BACKEND_CUDA, cuda_params);
      ASSERT_TRUE(cu.ok()) << cu.status();
      const bool ce = cuda_params.algorithm == "copy_engine";
      EXPECT_NE(cu->find("if (w == 1) {"), std::string::npos);
      const char* copy =
          ce ? "return cudaMemcpyAsync(yv, xv, nin * es" : "return LaunchCopy(segs, 1";
      EXPECT_NE(cu->find(copy), std::string::npos)
          << p << " " << cuda_params.Describe(v1::BACKEND_CUDA);
    }
  }
}

// The harness itself must catch wrong answers, or the test above proves
// nothing: a candidate that copies its input instead of summing fails.
TEST(KernelTemplates, HarnessRejectsWrongCandidate) {
  TempDir dir;
  const std::string src = R"(#include <string.h>
#include "pkforge/candidate.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t, void*) {
  memcpy(out[0].data, in[0].data, in[0].shape[0] * 4);
  return ctx->barrier(ctx);
})";
  WriteFile(dir.path() / "copy.cc", src);
  const std::string so = (dir.path() / "copy.so").string();
  auto r = Sh(fmt::format("{} -std=c++20 -shared -fPIC -I{} {} -o {}", PKFORGE_CXX,
                          PKFORGE_KERNELS_INCLUDE, (dir.path() / "copy.cc").string(), so));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(RunHost(so, "pkf_run", "allreduce", PKF_F32, 1, 100, 4096), "");
  EXPECT_NE(RunHost(so, "pkf_run", "allreduce", PKF_F32, 2, 100, 4096).find("expected"),
            std::string::npos);
}

// --------------------------------------- search on real host kernels ----
//
// Until the executor lands (its integration test will replace this), a local
// stand-in evaluator compiles each candidate with g++, checks it with the
// forked harness above and times it against a naive reference in the same
// forked run (interleaved, rank 0's clock around barrier-fenced calls). It is
// enough to show the search agent improving on its first candidate with real
// kernels rather than a scripted speedup.

constexpr char kNaiveReference[] = R"(#include <string.h>
#include "pkforge/candidate.h"
// Naive host allreduce (f32): stage the chunk, barrier, element-wise sum of
// every rank's chunk, barrier.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t, void*) {
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  long long n = 1;
  for (int i = 0; i < in[0].ndim; ++i) n *= in[0].shape[i];
  const long long chunk = (long long)(ctx->scratch_bytes / 4);
  for (long long off = 0; off < n; off += chunk) {
    const long long m = n - off < chunk ? n - off : chunk;
    memcpy(ctx->peer_scratch[ctx->rank], x + off, m * 4);
    if (ctx->barrier(ctx)) return 7;
    for (long long i = 0; i < m; ++i) {
      float acc = 0;
      for (int r = 0; r < ctx->world_size; ++r) acc += ((const float*)ctx->peer_scratch[r])[i];
      y[off + i] = acc;
    }
    if (ctx->barrier(ctx)) return 7;
  }
  return 0;
}
)";

double NowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Times `iters` interleaved calls of ref and cand (f32 allreduce) on `world`
// forked ranks; returns {ref_median_us, cand_median_us}, or {-1, -1}.
std::pair<double, double> TimeHost(const std::string& ref_so, const std::string& cand_so, int world,
                                   int64_t n, uint64_t scratch_bytes, int iters) {
  const size_t barrier_bytes = 256;
  const size_t times_bytes = 2 * static_cast<size_t>(iters) * sizeof(double);
  const size_t bytes = barrier_bytes + world * scratch_bytes + times_bytes + world * sizeof(int);
  char* shm = static_cast<char*>(
      mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (shm == MAP_FAILED) return {-1, -1};
  std::memset(shm, 0, bytes);
  auto* barrier = reinterpret_cast<pthread_barrier_t*>(shm);
  pthread_barrierattr_t attr;
  pthread_barrierattr_init(&attr);
  pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(barrier, &attr, world);
  char* scratch = shm + barrier_bytes;
  auto* times = reinterpret_cast<double*>(scratch + world * scratch_bytes);
  int* rcs = reinterpret_cast<int*>(reinterpret_cast<char*>(times) + times_bytes);
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(60);
      g_barrier = barrier;
      void* hr = dlopen(ref_so.c_str(), RTLD_NOW | RTLD_LOCAL);
      void* hc = dlopen(cand_so.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (hr == nullptr || hc == nullptr) _exit(3);
      auto ref = reinterpret_cast<pkf_run_fn>(dlsym(hr, "pkf_run"));
      auto cand = reinterpret_cast<pkf_run_fn>(dlsym(hc, "pkf_run"));
      std::vector<void*> peers(world);
      for (int p = 0; p < world; ++p) peers[p] = scratch + p * scratch_bytes;
      pkf_context ctx{};
      ctx.rank = r;
      ctx.world_size = world;
      ctx.peer_scratch = peers.data();
      ctx.scratch_bytes = scratch_bytes;
      ctx.barrier = HarnessBarrier;
      std::vector<float> x(n, 1.0f + r), y(n);
      pkf_tensor tin{x.data(), PKF_F32, 1, {n}};
      pkf_tensor tout{y.data(), PKF_F32, 1, {n}};
      for (int it = -2; it < iters; ++it) {  // two warm-up rounds
        for (int which = 0; which < 2; ++which) {
          HarnessBarrier(&ctx);
          const double t0 = NowUs();
          const int rc = (which == 0 ? ref : cand)(&ctx, &tin, 1, &tout, 1, nullptr);
          HarnessBarrier(&ctx);
          if (rc != 0) rcs[r] = rc;
          if (r == 0 && it >= 0) times[2 * it + which] = NowUs() - t0;
        }
      }
      _exit(0);
    }
    pids.push_back(pid);
  }
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  for (int r = 0; r < world; ++r) ok = ok && rcs[r] == 0;
  std::vector<double> ref_t, cand_t;
  for (int it = 0; it < iters; ++it) {
    ref_t.push_back(times[2 * it]);
    cand_t.push_back(times[2 * it + 1]);
  }
  pthread_barrier_destroy(barrier);
  munmap(shm, bytes);
  if (!ok || iters <= 0) return {-1, -1};
  std::sort(ref_t.begin(), ref_t.end());
  std::sort(cand_t.begin(), cand_t.end());
  return {ref_t[iters / 2], cand_t[iters / 2]};
}

class LocalHostEvaluator : public Evaluator {
 public:
  LocalHostEvaluator(fs::path dir, int64_t n, uint64_t scratch)
      : dir_(std::move(dir)), n_(n), scratch_(scratch) {
    WriteFile(dir_ / "ref.cc", kNaiveReference);
    ref_so_ = (dir_ / "ref.so").string();
    ref_ok_ = Compile((dir_ / "ref.cc").string(), ref_so_).code == 0;
  }
  bool ref_ok() const { return ref_ok_; }

  absl::StatusOr<EvaluationOutcome> Evaluate(const v1::EvaluateRequest& req,
                                             const ProgressCallback&, const CancelToken&) override {
    EvaluationOutcome out;
    v1::EvaluationResult& r = out.result;
    out.executor = "local-host-stand-in";
    const std::string tag = std::to_string(std::hash<std::string>()(req.source()));
    const std::string so = (dir_ / (tag + ".so")).string();
    if (!fs::exists(so)) {  // a compile cache by content, like the executor's
      WriteFile(dir_ / (tag + ".cc"), req.source());
      CmdResult c = Compile((dir_ / (tag + ".cc")).string(), so);
      if (c.code != 0) {
        r.set_status(v1::EvaluationResult::COMPILE_ERROR);
        r.mutable_compile()->set_output(c.out);
        return out;
      }
    }
    const std::string err =
        RunHost(so, "pkf_run", req.problem(), PKF_F32, req.world_size(), 4099, 4096);
    if (!err.empty()) {
      r.set_status(v1::EvaluationResult::WRONG_OUTPUT);
      r.set_message(err);
      return out;
    }
    auto [ref_us, cand_us] =
        TimeHost(ref_so_, so, req.world_size(), n_, scratch_,
                 // 0 = the executor's default, as a real executor reads it
                 req.timed_iters() > 0 ? req.timed_iters()
                                       : AgentOptions().executor_default_timed_iters);
    if (ref_us <= 0 || cand_us <= 0) {
      r.set_status(v1::EvaluationResult::RUNTIME_ERROR);
      return out;
    }
    r.set_status(v1::EvaluationResult::OK);
    r.mutable_reference()->set_median_us(ref_us);
    r.mutable_candidate()->set_median_us(cand_us);
    r.set_speedup(ref_us / cand_us);
    return out;
  }

 private:
  static CmdResult Compile(const std::string& cc, const std::string& so) {
    return Sh(fmt::format("{} -std=c++20 -O2 -shared -fPIC -I{} {} -o {}", PKFORGE_CXX,
                          PKFORGE_KERNELS_INCLUDE, cc, so));
  }
  fs::path dir_;
  int64_t n_;
  uint64_t scratch_;
  std::string ref_so_;
  bool ref_ok_ = false;
};

TEST(SearchOnRealHostKernels, ImprovesOnItsFirstCandidate) {
  TempDir dir;
  // 4 MiB per rank through a 1 MiB scratch: the baseline's 16 KiB chunks
  // pay ~256 barrier pairs per call, larger chunks a handful.
  LocalHostEvaluator eval(dir.path(), 1 << 20, 1 << 20);
  ASSERT_TRUE(eval.ref_ok());
  testing::RecordingSink sink;
  AgentEnv env;
  env.job_id = NewId("job");
  env.spec.set_problem("allreduce");
  env.spec.set_backend(v1::BACKEND_HOST);
  env.spec.set_world_size(2);
  env.spec.set_dtype(v1::DTYPE_F32);
  env.spec.set_seed(99);
  env.spec.mutable_agent()->set_kind(v1::AGENT_KIND_SEARCH);
  env.spec.mutable_budget()->set_max_evaluations(9);  // rungs of 6, 2, 1 configurations
  env.spec.mutable_budget()->set_wall_seconds(120);
  env.evaluator = &eval;
  env.sink = &sink;
  AgentOptions options;
  options.search.min_timed_iters = 5;
  auto agent = MakeAgent(env, options);
  ASSERT_TRUE(agent.ok()) << agent.status();
  auto r = (*agent)->Run();
  ASSERT_TRUE(r.ok()) << r.status();
  auto evals = sink.evaluations();
  ASSERT_EQ(evals.size(), 9u);
  for (const auto& e : evals) {
    EXPECT_EQ(e.result.status(), v1::EvaluationResult::OK) << e.result.message();
  }
  EXPECT_EQ(sink.candidates()[0].origin, "search:one_shot chunk=16KiB tile=256");
  ASSERT_TRUE(r->best_speedup.has_value());
  std::printf("search on host kernels: first %s %.3fx, best %.3fx\n",
              sink.candidates()[0].origin.c_str(), evals[0].result.speedup(), *r->best_speedup);
  EXPECT_GT(*r->best_speedup, 1.2 * evals[0].result.speedup())
      << "first " << evals[0].result.speedup() << ", best " << *r->best_speedup;
}

// ------------------------------------------------------------- cuda ----

TEST(KernelTemplates, EveryCudaInstantiationCompilesWithNvcc) {
  const std::string nvcc = NvccPath();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found";
  TempDir dir;
  // One translation unit per problem holding every instantiation (symbols
  // suffixed, the shared prelude emitted once): nvcc's start-up cost is paid
  // 3 times instead of ~200. One unsuffixed file checks the standalone form.
  std::vector<std::string> cmds;
  size_t total = 0;
  for (const char* p : kProblems) {
    auto space = SearchSpace(p, v1::BACKEND_CUDA);
    std::string tu;
    for (size_t i = 0; i < space.size(); ++i) {
      GenerateOptions opts;
      opts.symbol_suffix = fmt::format("_v{}", i);
      auto src = GenerateKernel(p, v1::BACKEND_CUDA, space[i], opts);
      ASSERT_TRUE(src.ok()) << src.status();
      tu += *src;
    }
    total += space.size();
    const fs::path cu = dir.path() / fmt::format("{}_all.cu", p);
    WriteFile(cu, tu);
    // -O0 is host-side optimization only (device code is still optimized by
    // ptxas) and cuts the host compile of ~80 variants from ~12 s to ~3 s.
    cmds.push_back(fmt::format("{} -arch=sm_90 -O0 -shared -Xcompiler -fPIC -I{} {} -o {}", nvcc,
                               PKFORGE_KERNELS_INCLUDE, cu.string(),
                               (dir.path() / fmt::format("{}_all.so", p)).string()));
  }
  auto standalone =
      GenerateKernel("allreduce", v1::BACKEND_CUDA, SearchSpace("allreduce", v1::BACKEND_CUDA)[0]);
  ASSERT_TRUE(standalone.ok());
  WriteFile(dir.path() / "one.cu", *standalone);
  const std::string one_so = (dir.path() / "one.so").string();
  cmds.push_back(fmt::format("{} -arch=sm_90 -O2 -shared -Xcompiler -fPIC -I{} {} -o {}", nvcc,
                             PKFORGE_KERNELS_INCLUDE, (dir.path() / "one.cu").string(), one_so));
  ASSERT_EQ(CompileAll(cmds), "");
  EXPECT_GT(total, 150u);
  // The standalone library exports the ABI's three symbols with C linkage.
  auto syms = Sh("nm -D --defined-only " + one_so);
  for (const char* s : {" pkf_run", " pkf_setup", " pkf_teardown"}) {
    EXPECT_NE(syms.out.find(std::string(s) + "\n"), std::string::npos) << s << "\n" << syms.out;
  }
}

}  // namespace
}  // namespace pkforge::agent
