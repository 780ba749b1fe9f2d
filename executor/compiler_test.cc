// Compiler tests: real g++ (and nvcc where present) in the real sandbox.
// A sandbox that cannot be set up fails the tests with its reason; only the
// cuda cases skip, when no nvcc exists. Here: compiling, diagnostics, flags,
// what the sandbox hides, creation and argument checks, cuda; the cache is
// tested in compile_cache_test.cc, timeouts and cancellation in
// compile_limits_test.cc (helpers in compiler_test_util.h).
#include "executor/compiler.h"

#include <dlfcn.h>

#include <cstdio>
#include <string>
#include <vector>

#include "executor/compiler_test_util.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkforge/candidate.h"

namespace pkforge::executor {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::string NvccPath() {
  std::string nvcc = PKFORGE_NVCC;
  if (nvcc.find("NOTFOUND") != std::string::npos) nvcc.clear();
  return nvcc;
}

bool IsValidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80             ? 1
                 : (c & 0xe0) == 0xc0 ? 2
                 : (c & 0xf0) == 0xe0 ? 3
                 : (c & 0xf8) == 0xf0 ? 4
                                      : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

TEST_F(CompilerTest, HostCompileProducesALoadableLibraryExportingPkfRun) {
  auto compiler = Make(BaseConfig());
  ASSERT_NE(compiler, nullptr);
  EXPECT_THAT(compiler->CompilerVersion(v1::BACKEND_HOST), StartsWith("g++ "));
  EXPECT_FALSE(compiler->cuda_available());
  const CompileRequest req = Host(HostSource(42));
  auto out = compiler->Compile(req, dir_.Sub("dest"));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->ok) << out->info.output();
  EXPECT_FALSE(out->info.cache_hit());
  EXPECT_FALSE(out->timed_out);
  EXPECT_GT(out->info.compile_ms(), 0);
  EXPECT_EQ(out->info.compiler(), compiler->CompilerVersion(v1::BACKEND_HOST));
  EXPECT_EQ(out->info.artifact_sha256(), compiler->CacheKey(req));
  EXPECT_THAT(std::vector<std::string>(out->info.flags().begin(), out->info.flags().end()),
              ::testing::IsSupersetOf(
                  std::vector<std::string>{"-std=c++20", "-O3", "-shared", "-fPIC", "-pthread",
                                           "-falign-functions=64", "-falign-loops=64",
                                           "-I<pkforge-include>"}));
  // Where the executor is installed is not the client's business (API fuzzing).
  for (const auto& f : out->info.flags())
    EXPECT_THAT(f, Not(HasSubstr(PKFORGE_KERNELS_INCLUDE))) << f;
  EXPECT_THAT(out->artifact_path, StartsWith(dir_.path() + "/dest/"));
  std::printf("[ metric ] host compile: %.0f ms\n", out->info.compile_ms());

  void* lib = dlopen(out->artifact_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto run = reinterpret_cast<pkf_run_fn>(dlsym(lib, "pkf_run"));
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run(nullptr, nullptr, 0, nullptr, 0, nullptr), 42);
  dlclose(lib);
}

TEST_F(CompilerTest, CompileErrorReturnsTheErrorLineAndIsCached) {
  auto compiler = Make(BaseConfig());
  ASSERT_NE(compiler, nullptr);
  const CompileRequest req = Host(
      "#include \"pkforge/candidate.h\"\n"
      "extern \"C\" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*,\n"
      "                        int32_t, void*) { return undeclared_thing_xyz; }\n");
  auto out = compiler->Compile(req, dir_.Sub("dest"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->ok);
  EXPECT_FALSE(out->timed_out);
  EXPECT_TRUE(out->artifact_path.empty());
  EXPECT_THAT(out->info.output(), HasSubstr("candidate.cc:3:"));
  EXPECT_THAT(out->info.output(), HasSubstr("'undeclared_thing_xyz' was not declared"));
  // Names relative to scratch: nothing about the host's paths.
  EXPECT_THAT(out->info.output(), Not(HasSubstr(".work")));
  EXPECT_FALSE(out->info.output_truncated());

  auto again = compiler->Compile(req, dir_.Sub("dest"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->info.cache_hit());
  EXPECT_FALSE(again->ok);
  EXPECT_EQ(again->info.output(), out->info.output());
  EXPECT_EQ(compiler->stats().compiles, 1);
  EXPECT_EQ(compiler->stats().failures, 1);
}

// Red team round 27: a full disk (filled by another client's artifacts) made
// a source's link fail with ENOSPC, and the failure was cached as the
// source's own compile error for good. A compiler whose failure blames the
// machine: reported, not cached; the next request compiles again.
TEST_F(CompilerTest, AFailureThatBlamesTheMachineIsNotCached) {
  const std::string wrap = dir_.Sub("enospc");
  WriteFile(wrap + "/cxx",
            "#!/bin/sh\n"
            "case \"$*\" in *candidate.cc*) ;; *) exec g++ \"$@\" ;; esac\n"
            "echo '/usr/bin/ld: final link failed: No space left on device' >&2\n"
            "echo 'collect2: error: ld returned 1 exit status' >&2\n"
            "exit 1\n");
  chmod((wrap + "/cxx").c_str(), 0755);
  CompilerConfig config = BaseConfig();
  config.cxx = wrap + "/cxx";
  auto compiler = Make(config);
  ASSERT_NE(compiler, nullptr);
  const CompileRequest req = Host(
      "#include \"pkforge/candidate.h\"\n"
      "extern \"C\" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*,\n"
      "                        int32_t, void*) { return 0; }\n");
  auto out = compiler->Compile(req, dir_.Sub("dest"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->ok);
  EXPECT_THAT(out->info.output(), HasSubstr("No space left on device"));
  auto again = compiler->Compile(req, dir_.Sub("dest"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->info.cache_hit()) << "a full disk's failure was served from the cache";
  EXPECT_EQ(compiler->stats().compiles, 2);

  EXPECT_TRUE(CompileFailureIsEnvironmental("ld: final link failed: No space left on device"));
  EXPECT_TRUE(CompileFailureIsEnvironmental(
      "g++: fatal error: Killed signal terminated program cc1plus"));
  EXPECT_FALSE(CompileFailureIsEnvironmental(
      "candidate.cc:3:5: error: 'undeclared_thing_xyz' was not declared in this scope"));
}

TEST_F(CompilerTest, HugeDiagnosticsAreTrimmedKeepingTheFirstErrors) {
  CompilerConfig config = BaseConfig();
  config.max_output_bytes = 4096;
  auto compiler = Make(config);
  ASSERT_NE(compiler, nullptr);
  std::string source = HostSource(1);
  for (int i = 0; i < 1000; ++i) source += fmt::format("int v_{0} = undeclared_first_{0};\n", i);
  auto out = compiler->Compile(Host(source), dir_.Sub("dest"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->ok);
  EXPECT_TRUE(out->info.output_truncated());
  EXPECT_LE(out->info.output().size(), 4096u);
  EXPECT_THAT(out->info.output(), HasSubstr("'undeclared_first_0' was not declared"));
  EXPECT_THAT(out->info.output(), Not(HasSubstr("undeclared_first_999")));
  EXPECT_THAT(out->info.output(), HasSubstr("compiler output trimmed: kept the first"));
}

TEST_F(CompilerTest, DiagnosticsQuotingInvalidUtf8StayValidUtf8) {
  auto compiler = Make(BaseConfig());
  ASSERT_NE(compiler, nullptr);
  auto out = compiler->Compile(Host("#error bad bytes \xff\xfe\x01 end\n"), dir_.Sub("dest"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->ok);
  EXPECT_THAT(out->info.output(), HasSubstr("bad bytes"));
  EXPECT_TRUE(IsValidUtf8(out->info.output())) << out->info.output();
  std::string wire;
  EXPECT_TRUE(out->info.SerializeToString(&wire));
}

// Issue #15: `#include "/dev/zero"` was reported as "killed by signal 0": the
// compiler read the endless file until the memory cgroup killed it (cc1plus),
// and the driver then exits with an error, so no signal is ours to report.
// Unbounded expansion still does that: a macro doubling 30 times (2^30
// tokens) is reported as the compiler running out of memory.
// Diagnostics that point into the harness's headers name them under
// <pkforge-include>, not the executor's install path.
TEST_F(CompilerTest, DiagnosticsDoNotDiscloseTheInstallPath) {
  auto compiler = Make(BaseConfig());
  ASSERT_NE(compiler, nullptr);
  // A pkf_run of the wrong type: the compiler cites candidate.h's declaration.
  auto out = compiler->Compile(
      Host("#include \"pkforge/candidate.h\"\nextern \"C\" double pkf_run(int) { return 0; }\n"),
      dir_.Sub("dest"));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_FALSE(out->ok);
  EXPECT_THAT(out->info.output(), HasSubstr("<pkforge-include>/pkforge/candidate.h"));
  EXPECT_THAT(out->info.output(), Not(HasSubstr(PKFORGE_KERNELS_INCLUDE)));
}

TEST_F(CompilerTest, AnUnboundedExpansionIsReportedAsTheCompilerRunningOutOfMemory) {
  CompilerConfig config = BaseConfig();
  config.max_memory_mb = 256;
  auto compiler = Make(config);
  ASSERT_NE(compiler, nullptr);
  std::string src = "#define A0 x+\n";
  for (int i = 1; i <= 30; ++i) src += fmt::format("#define A{} A{} A{}\n", i, i - 1, i - 1);
  src += "int f() { return A30 1; }\n";
  auto out = compiler->Compile(Host(src), dir_.Sub("dest"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->ok);
  EXPECT_FALSE(out->timed_out) << out->info.output();
  const std::string& text = out->info.output();
  std::printf("[ info ] unbounded expansion: %s\n", text.substr(0, text.find('\n')).c_str());
  EXPECT_THAT(text, Not(HasSubstr("signal 0")));
  EXPECT_THAT(text, HasSubstr("out of memory"));
  // With the memory cgroup (the usual case), the first line says what the
  // limit was; without it, the compiler's own "out of memory allocating".
  if (text.rfind("the compiler ran out of memory", 0) == 0) {
    EXPECT_THAT(text, HasSubstr("256 MiB"));
  }
}

// API fuzzing (session 16): `#include "/dev/zero"` still made every such
// request grow to the compile sandbox's cap (8 GiB, ~43 s here). The endless
// device files are /dev/null mounted without device access in the compile
// sandbox (SandboxPolicy::mask_endless_devices): the include fails at once
// ("Permission denied", a compile error naming the file) instead.
TEST_F(CompilerTest, AnIncludeOfAnEndlessDeviceFailsAtOnce) {
  CompilerConfig config = BaseConfig();
  config.max_memory_mb = 256;
  auto compiler = Make(config);
  ASSERT_NE(compiler, nullptr);
  for (const char* dev : {"/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"}) {
    const std::string src = fmt::format("#include \"{}\"\nint f() {{ return 1; }}\n", dev);
    auto out = compiler->Compile(Host(src), dir_.Sub(std::string("dest") + (dev + 5)));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_FALSE(out->ok) << dev;
    EXPECT_FALSE(out->timed_out) << dev;
    EXPECT_THAT(out->info.output(), HasSubstr(dev));
    EXPECT_THAT(out->info.output(), Not(HasSubstr("out of memory"))) << dev;
    EXPECT_LT(out->info.compile_ms(), 20'000) << dev << ": " << out->info.output();
  }
  // The compiler itself does not need them: an ordinary source compiles.
  auto plain = compiler->Compile(Host("int f() { return 1; }\n"), dir_.Sub("dest_plain"));
  ASSERT_TRUE(plain.ok()) << plain.status();
}TEST_F(CompilerTest, DisallowedFlagsAreRejectedNamingTheField) {
  auto compiler = Make(BaseConfig());
  ASSERT_NE(compiler, nullptr);
  auto status = compiler->ValidateFlags(v1::BACKEND_HOST, {"-O2", "-fplugin=evil.so"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("extra_flags[1]: '-fplugin=evil.so' is not allowed"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("allowed: -O0..-O3"));
  auto compiled =
      compiler->Compile(Host(HostSource(1), {"-O2", "-fplugin=evil.so"}), dir_.Sub("dest"));
  EXPECT_EQ(compiled.status().code(), absl::StatusCode::kInvalidArgument);

  // The allowlist itself (every good and bad flag) is tested without a
  // compiler in compile_flags_test.cc.
  EXPECT_TRUE(compiler->ValidateFlags(v1::BACKEND_CUDA, {"-arch=sm_90a"}).ok());
  EXPECT_EQ(compiler->ValidateFlags(v1::BACKEND_CUDA, {"-arch=sm_80"}).code(),
            absl::StatusCode::kInvalidArgument);

  // Allowed flags really compile, and the user's -O and -std win.
  auto out = compiler->Compile(
      Host(HostSource(3), {"-O1", "-std=c++17", "-DFOO=1", "-ffast-math", "-Wall", "-lm"}),
      dir_.Sub("dest"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->ok) << out->info.output();
  std::vector<std::string> flags(out->info.flags().begin(), out->info.flags().end());
  EXPECT_THAT(flags, ::testing::Contains("-O1"));
  EXPECT_THAT(flags, Not(::testing::Contains("-O3")));
  EXPECT_THAT(flags, Not(::testing::Contains("-std=c++20")));
}

TEST_F(CompilerTest, CompileCannotReadFilesOutsideTheSandbox) {
  auto compiler = Make(BaseConfig());
  ASSERT_NE(compiler, nullptr);
  const std::string secret_dir = dir_.Sub("secret");
  const std::string canary = "PKFORGE-CANARY-7f3a9c1e";
  WriteFile(secret_dir + "/canary.h", "int canary = 1; // " + canary + "\n#error " + canary + "\n");
  for (const std::string& target :
       {secret_dir + "/canary.h", std::string("/etc/shadow"), BaseConfig().cache_dir + "/.lock"}) {
    SCOPED_TRACE(target);
    auto out =
        compiler->Compile(Host("#include \"" + target + "\"\n" + HostSource(1)), dir_.Sub("dest"));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_FALSE(out->ok);
    EXPECT_THAT(out->info.output(), HasSubstr("No such file or directory"));
    EXPECT_THAT(out->info.output(), Not(HasSubstr(canary)));
  }
}

TEST_F(CompilerTest, CreateFailsWithTheReason) {
  CompilerConfig no_header = BaseConfig();
  no_header.include_dir = dir_.Sub("empty");
  auto c1 = Compiler::Create(no_header, sandbox_);
  EXPECT_EQ(c1.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(c1.status().message()), HasSubstr("include_dir"));

  CompilerConfig bad_cxx = BaseConfig();
  bad_cxx.cxx = "no-such-compiler-pkforge";
  auto c2 = Compiler::Create(bad_cxx, sandbox_);
  EXPECT_FALSE(c2.ok());
  EXPECT_THAT(std::string(c2.status().message()), HasSubstr("no-such-compiler-pkforge"));

  CompilerConfig bad_nvcc = BaseConfig();
  bad_nvcc.nvcc = dir_.path() + "/cuda/bin/nvcc";
  auto c3 = Compiler::Create(bad_nvcc, sandbox_);
  EXPECT_EQ(c3.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(c3.status().message()), HasSubstr("nvcc: "));

  EXPECT_EQ(Compiler::Create(BaseConfig(), nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  CompilerConfig relative = BaseConfig();
  relative.cxx = "bin/g++";
  EXPECT_EQ(Compiler::Create(relative, sandbox_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CompilerTest, SourceAndBackendAreChecked) {
  auto compiler = Make(BaseConfig());
  ASSERT_NE(compiler, nullptr);
  EXPECT_EQ(compiler->Compile(Host(""), dir_.Sub("d")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(compiler->Compile(Host(std::string(5 << 20, ' ')), dir_.Sub("d")).status().code(),
            absl::StatusCode::kInvalidArgument);
  // No nvcc configured: cuda is unavailable, said so.
  auto cuda = compiler->Compile(CompileRequest{v1::BACKEND_CUDA, "__global__ void k() {}", {}},
                                dir_.Sub("d"));
  EXPECT_EQ(cuda.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(compiler->CompilerVersion(v1::BACKEND_CUDA), "");
}

// ------------------------------------------------------------------ cuda ----

class CudaCompilerTest : public CompilerTest {
 protected:
  void SetUp() override {
    CompilerTest::SetUp();
    if (HasFatalFailure()) return;
    if (NvccPath().empty()) GTEST_SKIP() << "nvcc not found (PKFORGE_NVCC empty)";
  }
  CompilerConfig CudaConfig() const {
    CompilerConfig c = BaseConfig();
    c.nvcc = NvccPath();
    c.cuda_arch = "sm_90";
    return c;
  }
};

TEST_F(CudaCompilerTest, CudaCandidateUsingNcclAndCublasCompiles) {
  auto compiler = Make(CudaConfig());
  ASSERT_NE(compiler, nullptr);
  EXPECT_TRUE(compiler->cuda_available());
  EXPECT_THAT(compiler->CompilerVersion(v1::BACKEND_CUDA), StartsWith("nvcc "));
  const std::string source = R"(#include <cublas_v2.h>
#include <nccl.h>
#include "pkforge/candidate.h"
__global__ void Twice(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  int version = 0;
  ncclGetVersion(&version);
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return 1;
  Twice<<<1, 256, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<float*>(out[0].data), 256);
  cublasDestroy(handle);
  return version > 0 ? 0 : 2;
}
)";
  CompileRequest req{v1::BACKEND_CUDA, source, {"-lineinfo", "-Xptxas=-v"}};
  auto out = compiler->Compile(req, dir_.Sub("dest"));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->ok) << out->info.output();
  std::printf("[ metric ] cuda compile: %.0f ms\n", out->info.compile_ms());
  std::vector<std::string> flags(out->info.flags().begin(), out->info.flags().end());
  EXPECT_THAT(flags, ::testing::IsSupersetOf(
                         std::vector<std::string>{"-arch=sm_90", "-shared", "-cudart=shared",
                                                  "-Xcompiler=-fPIC", "-lnccl", "-lcublas"}));
  EXPECT_THAT(out->info.output(), HasSubstr("ptxas info"));  // -Xptxas=-v reached ptxas
  FILE* nm = popen(("nm -D --defined-only " + out->artifact_path).c_str(), "r");
  ASSERT_NE(nm, nullptr);
  std::string symbols;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), nm)) symbols.append(buf, n);
  pclose(nm);
  EXPECT_THAT(symbols, HasSubstr(" pkf_run\n"));

  auto hit = compiler->Compile(req, dir_.Sub("dest2"));
  ASSERT_TRUE(hit.ok() && hit->ok);
  EXPECT_TRUE(hit->info.cache_hit());

  // sm_90a (arch-specific features such as wgmma) replaces the server's arch.
  auto a = compiler->Compile(CompileRequest{v1::BACKEND_CUDA, source, {"-arch=sm_90a"}},
                             dir_.Sub("dest3"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->ok) << a->info.output();
  std::vector<std::string> a_flags(a->info.flags().begin(), a->info.flags().end());
  EXPECT_THAT(a_flags, ::testing::Contains("-arch=sm_90a"));
  EXPECT_THAT(a_flags, Not(::testing::Contains("-arch=sm_90")));
}

TEST_F(CudaCompilerTest, CudaCompileErrorIsReported) {
  auto compiler = Make(CudaConfig());
  ASSERT_NE(compiler, nullptr);
  auto out = compiler->Compile(
      CompileRequest{v1::BACKEND_CUDA, "__global__ void K() { undefined_cuda_symbol(); }\n", {}},
      dir_.Sub("dest"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->ok);
  EXPECT_THAT(out->info.output(), HasSubstr("candidate.cu"));
  EXPECT_THAT(out->info.output(), HasSubstr("undefined_cuda_symbol"));
}

}  // namespace
}  // namespace pkforge::executor
