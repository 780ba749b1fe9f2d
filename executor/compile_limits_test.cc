// The compiler's limits, with real g++ in the real sandbox: a compile that
// runs past its timeout (reported, not cached, remembered for a while) and
// cancellation (of the compiling request, of a waiter). Helpers in
// compiler_test_util.h.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "executor/compiler.h"
#include "executor/compiler_test_util.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkforge/candidate.h"

namespace pkforge::executor {
namespace {

using ::testing::HasSubstr;

// Constant evaluation that would take minutes: each loop stays under GCC's
// per-loop limit and the total under its operation limit only after ~10^10 ops.
const char* kSlowSource = R"(#include "pkforge/candidate.h"
constexpr long Spin() {
  long s = 0;
  for (long i = 0; i < 200000; ++i)
    for (long j = 0; j < 200000; ++j) s += i ^ j;
  return s;
}
static_assert(Spin() != 1, "spin");
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  return 0;
}
)";

TEST_F(CompilerTest, CompileTimeoutIsReportedAndNotCached) {
  CompilerConfig config = BaseConfig();
  config.timeout_ms = 1500;
  auto compiler = Make(config);
  ASSERT_NE(compiler, nullptr);
  const CompileRequest req = Host(kSlowSource);
  const auto start = Clock::now();
  auto out = compiler->Compile(req, dir_.Sub("dest"));
  const double ms = MsSince(start);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->timed_out);
  EXPECT_FALSE(out->ok);
  EXPECT_THAT(out->info.output(), HasSubstr("compile timed out after"));
  EXPECT_LT(ms, 10'000);
  std::printf("[ metric ] timed-out compile returned after %.0f ms (limit 1500)\n", ms);
  EXPECT_FALSE(fs::exists(config.cache_dir + "/" + compiler->CacheKey(req) + ".json"));
  EXPECT_EQ(compiler->stats().failures, 1);
}

// The same source timing out again is answered at once for a while, without
// running the compiler (red team round 18 r18_compile_burn burned the whole
// limit on every request); with the memory off it compiles again.
TEST_F(CompilerTest, ARecentTimeoutIsRememberedWithoutCompilingAgain) {
  for (const int64_t memory_s : {int64_t{600}, int64_t{0}}) {
    CompilerConfig config = WrappedConfig(memory_s > 0 ? "cache_on" : "cache_off");
    config.timeout_ms = 1500;
    config.timeout_memory_s = memory_s;
    auto compiler = Make(config);
    ASSERT_NE(compiler, nullptr);
    const int before = CompileInvocations();
    auto first = compiler->Compile(Host(kSlowSource), dir_.Sub("d1"));
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_TRUE(first->timed_out);
    auto second = compiler->Compile(Host(kSlowSource), dir_.Sub("d2"));
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_TRUE(second->timed_out);
    EXPECT_FALSE(second->ok);
    EXPECT_FALSE(second->info.cache_hit());
    if (memory_s > 0) {
      EXPECT_EQ(CompileInvocations() - before, 1) << "the compiler ran again";
      EXPECT_THAT(second->info.output(), HasSubstr("timed out"));
      EXPECT_THAT(second->info.output(), HasSubstr("without compiling"));
      EXPECT_EQ(compiler->stats().timeouts_remembered, 1);
    } else {
      EXPECT_EQ(CompileInvocations() - before, 2);
      EXPECT_EQ(compiler->stats().timeouts_remembered, 0);
    }
  }
}

TEST_F(CompilerTest, CancellationReturnsCancelledQuickly) {
  auto compiler = Make(BaseConfig());
  ASSERT_NE(compiler, nullptr);
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cancel = true;
  });
  const auto start = Clock::now();
  auto out = compiler->Compile(Host(kSlowSource), dir_.Sub("dest"), &cancel);
  const double ms = MsSince(start);
  canceller.join();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
  EXPECT_LT(ms, 3000);
  std::printf("[ metric ] cancelled compile returned %.0f ms after start (cancel at 500)\n", ms);
  // Nothing of it stays: no cache entry, no scratch directory.
  EXPECT_FALSE(
      fs::exists(BaseConfig().cache_dir + "/" + compiler->CacheKey(Host(kSlowSource)) + ".json"));
  EXPECT_TRUE(fs::is_empty(BaseConfig().cache_dir + "/.work"));

  // Already cancelled: returns at once.
  auto again = compiler->Compile(Host(HostSource(5)), dir_.Sub("dest"), &cancel);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kCancelled);
}

TEST_F(CompilerTest, WhenTheCompilingRequestIsCancelledAWaiterTakesOver) {
  CompilerConfig config = WrappedConfig();
  config.timeout_ms = 2000;
  auto compiler = Make(config);
  ASSERT_NE(compiler, nullptr);
  std::atomic<bool> cancel_first{false};
  absl::StatusOr<CompileOutcome> first = absl::UnknownError("not run");
  std::thread leader(
      [&] { first = compiler->Compile(Host(kSlowSource), dir_.Sub("a"), &cancel_first); });
  while (CompileInvocations() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::atomic<bool> never{false};
  absl::StatusOr<CompileOutcome> second = absl::UnknownError("not run");
  std::thread waiter([&] { second = compiler->Compile(Host(kSlowSource), dir_.Sub("b"), &never); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  cancel_first = true;
  leader.join();
  waiter.join();
  EXPECT_EQ(first.status().code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->timed_out);  // it compiled itself, to its own deadline
  EXPECT_EQ(CompileInvocations(), 2);
}

TEST_F(CompilerTest, AWaiterCanGiveUpWithoutStoppingTheCompile) {
  CompilerConfig config = WrappedConfig();
  config.timeout_ms = 2000;
  auto compiler = Make(config);
  ASSERT_NE(compiler, nullptr);
  absl::StatusOr<CompileOutcome> first = absl::UnknownError("not run");
  std::thread leader([&] { first = compiler->Compile(Host(kSlowSource), dir_.Sub("a")); });
  while (CompileInvocations() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  const auto start = Clock::now();
  auto second = compiler->Compile(Host(kSlowSource), dir_.Sub("b"), &cancel);
  const double ms = MsSince(start);
  canceller.join();
  leader.join();
  EXPECT_EQ(second.status().code(), absl::StatusCode::kCancelled);
  EXPECT_LT(ms, 1000);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->timed_out);  // ran on to its own deadline
  EXPECT_EQ(CompileInvocations(), 1);
}

}  // namespace
}  // namespace pkforge::executor
