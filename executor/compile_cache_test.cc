// The compiler's cache, with real g++ in the real sandbox: hits that do not
// run the compiler, identical compiles (concurrent, or from two compilers on
// one folder) that run it once, keys, LRU eviction, and corrupt entries that
// are recompiled, never served. Helpers in compiler_test_util.h.
#include <dlfcn.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <latch>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "executor/compiler.h"
#include "executor/compiler_test_util.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkforge/candidate.h"

namespace pkforge::executor {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(CompilerTest, CacheHitDoesNotInvokeTheCompiler) {
  auto compiler = Make(WrappedConfig());
  ASSERT_NE(compiler, nullptr);
  ASSERT_EQ(CompileInvocations(), 0);  // Create only probed the version
  EXPECT_THAT(ReadFile(log_), HasSubstr("--version"));
  const CompileRequest req = Host(HostSource(7));
  auto first = compiler->Compile(req, dir_.Sub("a"));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->ok) << first->info.output();
  EXPECT_FALSE(first->info.cache_hit());

  const auto start = Clock::now();
  auto second = compiler->Compile(req, dir_.Sub("b"));
  const double hit_ms = MsSince(start);
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(second->ok);
  EXPECT_TRUE(second->info.cache_hit());
  EXPECT_EQ(second->info.compile_ms(), 0);
  EXPECT_EQ(CompileInvocations(), 1) << ReadFile(log_);
  EXPECT_NE(second->artifact_path, first->artifact_path);
  EXPECT_EQ(ReadFile(second->artifact_path), ReadFile(first->artifact_path));
  EXPECT_EQ(second->info.artifact_sha256(), first->info.artifact_sha256());
  // A private copy, never a link to the cache's file.
  struct stat st;
  ASSERT_EQ(stat(second->artifact_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u);
  std::printf("[ metric ] cache hit latency: %.2f ms (compile was %.0f ms)\n", hit_ms,
              first->info.compile_ms());
  EXPECT_EQ(compiler->stats().hits, 1);
  EXPECT_EQ(compiler->stats().misses, 1);
}

TEST_F(CompilerTest, EightConcurrentIdenticalCompilesRunTheCompilerOnce) {
  auto compiler = Make(WrappedConfig());
  ASSERT_NE(compiler, nullptr);
  const CompileRequest req = Host(HostSource(8));
  constexpr int kThreads = 8;
  std::vector<absl::StatusOr<CompileOutcome>> outs(kThreads, absl::UnknownError("not run"));
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      const std::string dest = dir_.Sub(fmt::format("dest{}", i));
      start.arrive_and_wait();
      outs[i] = compiler->Compile(req, dest);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_TRUE(outs[i].ok()) << i << ": " << outs[i].status();
    EXPECT_TRUE(outs[i]->ok) << i;
    EXPECT_TRUE(fs::exists(outs[i]->artifact_path)) << i;
  }
  EXPECT_EQ(CompileInvocations(), 1) << ReadFile(log_);
  const Compiler::Stats s = compiler->stats();
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.joined + s.hits, kThreads - 1);
}

// Issue #15: the caller learns hit-or-compile before the compiler runs (the
// executor's EvaluateProgress.compiling.cache_hit), once, and it matches the
// outcome, for the leader, a later hit and requests that join a flight.
TEST_F(CompilerTest, OnStartReportsTheCacheOutcomeOnceBeforeTheCompilerRuns) {
  auto compiler = Make(WrappedConfig());
  ASSERT_NE(compiler, nullptr);
  const CompileRequest req = Host(HostSource(9));
  std::vector<bool> calls;
  int invocations_at_start = -1;
  auto first = compiler->Compile(req, dir_.Sub("a"), nullptr, [&](bool hit) {
    calls.push_back(hit);
    invocations_at_start = CompileInvocations();
  });
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(calls, std::vector<bool>{false});
  EXPECT_EQ(invocations_at_start, 0) << "called before the compiler started";
  EXPECT_FALSE(first->info.cache_hit());

  calls.clear();
  auto second =
      compiler->Compile(req, dir_.Sub("b"), nullptr, [&](bool hit) { calls.push_back(hit); });
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(calls, std::vector<bool>{true});
  EXPECT_TRUE(second->info.cache_hit());

  // Concurrent identical requests: each reports what its outcome says.
  const CompileRequest fresh = Host(HostSource(10));
  constexpr int kThreads = 4;
  std::vector<std::vector<bool>> seen(kThreads);
  std::vector<absl::StatusOr<CompileOutcome>> outs(kThreads, absl::UnknownError("not run"));
  std::latch go(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      go.arrive_and_wait();
      outs[i] = compiler->Compile(fresh, dir_.Sub(fmt::format("c{}", i)), nullptr,
                                  [&, i](bool hit) { seen[i].push_back(hit); });
    });
  for (auto& t : threads) t.join();
  int compiled = 0;
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_TRUE(outs[i].ok()) << outs[i].status();
    ASSERT_EQ(seen[i].size(), 1u) << i;
    EXPECT_EQ(seen[i][0], outs[i]->info.cache_hit()) << i;
    compiled += !outs[i]->info.cache_hit();
  }
  EXPECT_EQ(compiled, 1);
}

TEST_F(CompilerTest, TwoExecutorsSharingTheCacheDirCompileOnce) {
  // Two Compiler objects share nothing in memory, like two processes: only
  // the cache directory's lock files keep them from compiling twice.
  const CompilerConfig config = WrappedConfig();
  auto first = Make(config);
  auto second = Make(config);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  const CompileRequest req = Host(HostSource(11));
  constexpr int kThreads = 6;
  std::vector<absl::StatusOr<CompileOutcome>> outs(kThreads, absl::UnknownError("not run"));
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      const std::string dest = dir_.Sub(fmt::format("dest{}", i));
      start.arrive_and_wait();
      outs[i] = (i % 2 == 0 ? first : second)->Compile(req, dest);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_TRUE(outs[i].ok()) << i << ": " << outs[i].status();
    EXPECT_TRUE(outs[i]->ok) << i;
  }
  EXPECT_EQ(CompileInvocations(), 1) << ReadFile(log_);
  EXPECT_EQ(first->stats().compiles + second->stats().compiles, 1);
  // The lock files are gone with their compiles.
  EXPECT_TRUE(fs::is_empty(config.cache_dir + "/.locks"));
}

TEST_F(CompilerTest, KeysDifferForSourceFlagsAndBackend) {
  auto compiler = Make(BaseConfig());
  ASSERT_NE(compiler, nullptr);
  const std::vector<CompileRequest> reqs = {
      Host(HostSource(1)),
      Host(HostSource(2)),
      Host(HostSource(1), {"-O2"}),
      Host(HostSource(1), {"-DX=1"}),
      Host(HostSource(1), {"-DX=2"}),
      Host(HostSource(1), {"-DX=1", "-O2"}),
      Host(HostSource(1), {"-O2", "-DX=1"}),
      CompileRequest{v1::BACKEND_CUDA, HostSource(1), {}},
  };
  std::set<std::string> keys;
  for (const auto& r : reqs) {
    const std::string key = compiler->CacheKey(r);
    EXPECT_EQ(key.size(), 64u);
    keys.insert(key);
  }
  EXPECT_EQ(keys.size(), reqs.size());
  EXPECT_EQ(compiler->CacheKey(reqs[0]), compiler->CacheKey(Host(HostSource(1))));
  // A user -O replaces the server's default instead of piling up.
  auto args = compiler->CompilerArgs(reqs[2]);
  EXPECT_EQ(std::count(args.begin(), args.end(), "-O3"), 0);
  EXPECT_EQ(std::count(args.begin(), args.end(), "-O2"), 1);
}

TEST_F(CompilerTest, LruEvictionKeepsTheBoundAndTheMostRecentlyUsed) {
  int64_t entry_bytes = 0;
  {
    auto probe = Make(BaseConfig("measure"));
    ASSERT_NE(probe, nullptr);
    auto out = probe->Compile(Host(HostSource(100)), dir_.Sub("dest"));
    ASSERT_TRUE(out.ok() && out->ok);
    entry_bytes = probe->stats().bytes;
    ASSERT_GT(entry_bytes, 0);
  }
  CompilerConfig config = BaseConfig();
  config.cache_max_bytes = entry_bytes * 5 / 2;  // room for two entries
  auto compiler = Make(config);
  ASSERT_NE(compiler, nullptr);
  auto compile = [&](int v) {
    auto out = compiler->Compile(Host(HostSource(v)), dir_.Sub("dest"));
    EXPECT_TRUE(out.ok() && out->ok);
    return out.ok() ? *out : CompileOutcome{};
  };
  auto cached = [&](const CompileOutcome& o) {
    return fs::exists(config.cache_dir + "/" + o.info.artifact_sha256() + ".json");
  };
  CompileOutcome a = compile(1);
  CompileOutcome b = compile(2);
  EXPECT_TRUE(cached(a) && cached(b));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(compile(1).info.cache_hit());  // touches a: b is now least recently used
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CompileOutcome c = compile(3);
  EXPECT_TRUE(cached(a));
  EXPECT_FALSE(cached(b));
  EXPECT_FALSE(fs::exists(config.cache_dir + "/" + b.info.artifact_sha256() + ".so"));
  EXPECT_TRUE(cached(c));
  Compiler::Stats s = compiler->stats();
  EXPECT_LE(s.bytes, config.cache_max_bytes);
  EXPECT_EQ(s.entries, 2);
  EXPECT_EQ(s.evictions, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CompileOutcome d = compile(4);
  EXPECT_TRUE(cached(d));
  EXPECT_TRUE(cached(c));
  EXPECT_FALSE(cached(a));
  EXPECT_LE(compiler->stats().bytes, config.cache_max_bytes);

  // A restarted executor rebuilds the order from the files and keeps the bound.
  config.cache_max_bytes = entry_bytes * 3 / 2;
  auto restarted = Make(config);
  ASSERT_NE(restarted, nullptr);
  EXPECT_EQ(restarted->stats().entries, 1);
  EXPECT_TRUE(cached(d));
  EXPECT_FALSE(cached(c));
}

TEST_F(CompilerTest, CorruptCacheEntriesAreRecompiledNeverServed) {
  auto compiler = Make(BaseConfig());
  ASSERT_NE(compiler, nullptr);
  const CompileRequest req = Host(HostSource(9));
  const std::string base = BaseConfig().cache_dir + "/" + compiler->CacheKey(req);
  auto check_loads = [](const CompileOutcome& o) {
    void* lib = dlopen(o.artifact_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    auto run = reinterpret_cast<pkf_run_fn>(dlsym(lib, "pkf_run"));
    ASSERT_NE(run, nullptr);
    EXPECT_EQ(run(nullptr, nullptr, 0, nullptr, 0, nullptr), 9);
    dlclose(lib);
  };
  auto first = compiler->Compile(req, dir_.Sub("d0"));
  ASSERT_TRUE(first.ok() && first->ok);
  const std::string good = ReadFile(base + ".so");

  struct Damage {
    const char* what;
    std::function<void()> apply;
  };
  const std::vector<Damage> damages = {
      {"truncated library", [&] { fs::resize_file(base + ".so", 100); }},
      {"garbage metadata", [&] { WriteFile(base + ".json", "{not json\x01"); }},
      {"metadata of the wrong type", [&] { WriteFile(base + ".json", "[1,2,3]"); }},
      {"same size, one byte flipped",
       [&] {
         std::string bad = good;
         bad[bad.size() / 2] ^= 0x5a;
         WriteFile(base + ".so", bad);
       }},
      {"library missing", [&] { fs::remove(base + ".so"); }},
  };
  int i = 0;
  for (const auto& damage : damages) {
    SCOPED_TRACE(damage.what);
    fs::permissions(base + ".so", fs::perms::owner_write, fs::perm_options::add);
    fs::permissions(base + ".json", fs::perms::owner_write, fs::perm_options::add);
    damage.apply();
    auto out = compiler->Compile(req, dir_.Sub(fmt::format("d{}", ++i)));
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_TRUE(out->ok) << out->info.output();
    EXPECT_FALSE(out->info.cache_hit());
    check_loads(*out);
    EXPECT_EQ(ReadFile(base + ".so").size(), good.size());
  }
  EXPECT_EQ(compiler->stats().compiles, 1 + static_cast<int64_t>(damages.size()));
  auto hit = compiler->Compile(req, dir_.Sub("last"));
  ASSERT_TRUE(hit.ok() && hit->ok);
  EXPECT_TRUE(hit->info.cache_hit());
}

}  // namespace
}  // namespace pkforge::executor
