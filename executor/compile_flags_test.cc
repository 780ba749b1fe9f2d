// The compile flag allowlist (compile_flags.h) on its own: no compiler, no
// sandbox. compiler_test.cc checks that Compiler applies it.
#include "executor/compile_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pkforge::executor {
namespace {

using ::testing::HasSubstr;

constexpr char kArch[] = "sm_90";

TEST(CompileFlagsTest, DisallowedFlagsAreRejectedNamingTheField) {
  auto status = ValidateCompileFlags(v1::BACKEND_HOST, {"-O2", "-fplugin=evil.so"}, kArch);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("extra_flags[1]: '-fplugin=evil.so' is not allowed"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("allowed: -O0..-O3"));

  const std::vector<std::string> bad_host = {"-o",
                                             "out.so",
                                             "-I/etc",
                                             "-isystem/etc",
                                             "-include/etc/passwd",
                                             "-L/tmp",
                                             "-lssl",
                                             "-l",
                                             "@/etc/passwd",
                                             "-B/tmp",
                                             "-wrapper",
                                             "-specs=/tmp/x",
                                             "-Wl,-rpath,/tmp",
                                             "-Wa,-adhln=/tmp/x",
                                             "-Wp,-MD,/tmp/x",
                                             "-Xlinker",
                                             "-Xassembler",
                                             "-fplugin-arg-x-y=1",
                                             "-save-temps",
                                             "-E",
                                             "-M",
                                             "-MF/tmp/x",
                                             "--sysroot=/",
                                             "-DX\nY",
                                             "-D",
                                             "-D1X",
                                             "-march=native;id",
                                             "-fdump-tree-all",
                                             "-ftemplate-depth=999999999",
                                             "-O3 -fplugin=x",
                                             "--compiler-bindir=/tmp",
                                             "-x",
                                             "c",
                                             "-frandom-seed=x",
                                             std::string(300, 'O')};
  for (const auto& f : bad_host) {
    auto s = ValidateCompileFlags(v1::BACKEND_HOST, {"-O1", "-Wall", f}, kArch);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << f;
    EXPECT_THAT(std::string(s.message()), HasSubstr("extra_flags[2]")) << f;
  }
  const std::vector<std::string> bad_cuda = {"--compiler-bindir=/tmp",
                                             "-ccbin=/tmp",
                                             "-ccbin",
                                             "-Xcompiler=-fplugin=x.so",
                                             "-Xcompiler",
                                             "-Xcompiler=-Wl,-rpath,/x",
                                             "-Xlinker=-rpath=/x",
                                             "-Xptxas=--foo",
                                             "-arch=sm_80",
                                             "-arch=sm_90af",
                                             "-gencode=arch=compute_80,code=sm_80",
                                             "-odir=/tmp",
                                             "--keep",
                                             "-lssl",
                                             "-I/etc",
                                             "-rdc=true",
                                             "--dryrun",
                                             "-std=c++11",
                                             "-maxrregcount=1000"};
  for (const auto& f : bad_cuda) {
    auto s = ValidateCompileFlags(v1::BACKEND_CUDA, {f}, kArch);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << f;
    EXPECT_THAT(std::string(s.message()), HasSubstr("extra_flags[0]")) << f;
  }
  EXPECT_EQ(ValidateCompileFlags(v1::BACKEND_UNSPECIFIED, {}, kArch).code(),
            absl::StatusCode::kInvalidArgument);

  const std::vector<std::string> good_host = {"-O2",
                                              "-DFOO=1",
                                              "-DBAR",
                                              "-UBAZ",
                                              "-march=native",
                                              "-mtune=native",
                                              "-mavx2",
                                              "-ffast-math",
                                              "-funroll-loops",
                                              "-fno-exceptions",
                                              "-ffp-contract=fast",
                                              "-Wall",
                                              "-Wno-unused-parameter",
                                              "-Werror",
                                              "-std=c++17",
                                              "-g",
                                              "-lm",
                                              "-fopenmp"};
  EXPECT_TRUE(ValidateCompileFlags(v1::BACKEND_HOST, good_host, kArch).ok())
      << ValidateCompileFlags(v1::BACKEND_HOST, good_host, kArch);
  const std::vector<std::string> good_cuda = {"-O2",
                                              "-lineinfo",
                                              "--use_fast_math",
                                              "-maxrregcount=64",
                                              "-Xptxas=-v,-warn-spills",
                                              "-Xcompiler=-O3,-march=native",
                                              "-arch=sm_90a",
                                              "-DX=1",
                                              "--expt-relaxed-constexpr",
                                              "-std=c++20",
                                              "--ftz=true",
                                              "--diag-suppress=177,550",
                                              "-lcuda"};
  EXPECT_TRUE(ValidateCompileFlags(v1::BACKEND_CUDA, good_cuda, kArch).ok())
      << ValidateCompileFlags(v1::BACKEND_CUDA, good_cuda, kArch);
}

TEST(CompileFlagsTest, TooManyFlagsAndTheHelpersForTheCommandLine) {
  const std::vector<std::string> many(65, "-O2");
  auto s = ValidateCompileFlags(v1::BACKEND_HOST, many, kArch);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("extra_flags: 65 flags, at most 64"));
  EXPECT_TRUE(IsOptLevelFlag("-O2"));
  EXPECT_FALSE(IsOptLevelFlag("-O"));
  EXPECT_TRUE(IsCudaArchName("sm_90"));
  EXPECT_TRUE(IsCudaArchName("sm_100"));
  EXPECT_FALSE(IsCudaArchName("sm_90;x"));
  EXPECT_FALSE(IsCudaArchName("compute_90"));
  EXPECT_EQ(PrintableForMessage("a\nb"), "a\\x0ab");
}

}  // namespace
}  // namespace pkforge::executor
