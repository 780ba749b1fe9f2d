// Shared by the compiler's tests (one compiler_test binary): compiler_test.cc
// (compiling, diagnostics, flags, the sandbox, cuda), compile_cache_test.cc
// (the cache: hits, concurrent and shared compiles, keys, eviction,
// corruption) and compile_limits_test.cc (timeouts, cancellation). CompilerTest
// gives each test a real sandbox (one per suite), a temporary folder and a
// compiler wrapper that logs its invocations.
//
// Thread safety: the helpers are for the test's threads; CompilerTest's
// sandbox is shared by the suite's tests, which run one at a time.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "executor/compiler.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace pkforge::executor {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Under /var/tmp, not /tmp, so "not visible inside" is not merely the
// sandbox's private /tmp hiding it.
class TempDir {
 public:
  TempDir() {
    std::string templ = "/var/tmp/pkforge-compiler-test-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) std::abort();
    path_ = templ;
    chmod(path_.c_str(), 0755);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const {
    fs::create_directories(path_ + "/" + name);
    return path_ + "/" + name;
  }

 private:
  std::string path_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

// A valid host candidate whose pkf_run returns `value` (distinct values give
// distinct sources).
inline std::string HostSource(int value) {
  return fmt::format(R"(#include "pkforge/candidate.h"
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {{
  return {};
}}
)",
                     value);
}

class CompilerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sandbox::SandboxConfig config;
    config.cgroup_base = "pkforge-compiler-test";
    auto sb = sandbox::Sandbox::Create(config);
    if (!sb.ok()) {
      setup_error_ = new std::string(sb.status().ToString());
      return;
    }
    absl::Status self = (*sb)->SelfTest();
    if (!self.ok()) setup_error_ = new std::string(self.ToString());
    sandbox_ = sb->release();
  }
  static void TearDownTestSuite() {
    delete sandbox_;
    sandbox_ = nullptr;
  }

  void SetUp() override {
    // Not a skip: this machine must be able to sandbox compiles.
    ASSERT_EQ(setup_error_, nullptr) << "sandbox unusable here: " << *setup_error_;
  }

  CompilerConfig BaseConfig(const std::string& cache = "cache") const {
    CompilerConfig c;
    c.include_dir = PKFORGE_KERNELS_INCLUDE;
    c.cache_dir = dir_.path() + "/" + cache;
    c.timeout_ms = 60'000;
    return c;
  }

  std::unique_ptr<Compiler> Make(CompilerConfig config) const {
    auto c = Compiler::Create(std::move(config), sandbox_);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // cxx = a wrapper that logs every invocation (one line of arguments) and
  // execs g++; the log's folder is the one extra writable path.
  CompilerConfig WrappedConfig(const std::string& cache = "cache") {
    const std::string wrap = dir_.Sub("wrap");
    log_dir_ = dir_.Sub("log");
    log_ = log_dir_ + "/invocations.log";
    WriteFile(wrap + "/cxx", fmt::format("#!/bin/sh\necho \"$*\" >> {}\nexec g++ \"$@\"\n", log_));
    chmod((wrap + "/cxx").c_str(), 0755);
    CompilerConfig c = BaseConfig(cache);
    c.cxx = wrap + "/cxx";
    c.extra_rw_paths = {log_dir_};
    return c;
  }
  // Compiler runs logged by the wrapper (version probes excluded).
  int CompileInvocations() const {
    std::istringstream in(ReadFile(log_));
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find("candidate.cc") != line.npos;
    return n;
  }

  static CompileRequest Host(std::string source, std::vector<std::string> flags = {}) {
    return CompileRequest{v1::BACKEND_HOST, std::move(source), std::move(flags)};
  }

  inline static sandbox::Sandbox* sandbox_ = nullptr;
  inline static std::string* setup_error_ = nullptr;
  TempDir dir_;
  std::string log_dir_, log_;
};

}  // namespace pkforge::executor
