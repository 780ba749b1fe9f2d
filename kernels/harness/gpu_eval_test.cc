// End-to-end tests of the cuda backend (ctest label gpu). Every test skips
// when no GPU is usable (CI builds with nvcc but has no GPU). World sizes
// beyond 1 run when the machine has that many GPUs.
#include <dirent.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "kernels/harness/cuda_probe.h"
#include "kernels/harness/problem.h"
#include "kernels/harness/timing_schedule.h"
#include "pkforge/v1/common.pb.h"

namespace pkforge::kernels {
namespace {

using Result = pkforge::v1::EvaluationResult;

int Gpus() {
  static const int n = [] {
    auto p = ProbeCudaDevices();
    return p.ok() ? p->device_count : 0;
  }();
  return n;
}

#define REQUIRE_GPU() \
  if (Gpus() == 0) GTEST_SKIP() << "no usable GPU"

// World sizes to exercise: 1 and every power of two the machine has (max 8).
std::vector<int> Worlds(const Problem& p) {
  std::vector<int> w;
  for (int n : {1, 2, 4, 8})
    if (n <= Gpus() && n >= p.min_world && n <= p.max_world) w.push_back(n);
  return w;
}

struct Launched {
  int exit_code = -1;
  double seconds = 0;
  Result result;
  std::string raw;
};

Launched Launch(const std::string& problem, const std::string& candidate, int world,
                const std::string& extra = "", const std::string& dtype = "bf16") {
  const std::string cmd = fmt::format(
      "{} launch --problem {} --backend cuda --world-size {} --dtype {} --size tiny --trials 2 "
      "--warmup 2 --iters 6 {} --json {} {}/{}.so",
      PKF_WORKER, problem, world, dtype,
      extra.find("--timeout") == std::string::npos ? "--timeout 120" : "", extra, PKF_CANDIDATES,
      candidate);
  Launched l;
  const auto t0 = std::chrono::steady_clock::now();
  FILE* f = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) l.raw.append(buf, n);
  const int st = pclose(f);
  l.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  l.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  auto s = google::protobuf::util::JsonStringToMessage(l.raw, &l.result);
  EXPECT_TRUE(s.ok()) << cmd << "\n" << l.raw;
  return l;
}

const pkforge::v1::CheatCheck* FindCheck(const Result& r, const std::string& name) {
  for (const auto& c : r.cheat_checks())
    if (c.check() == name) return &c;
  return nullptr;
}

std::string Describe(const Launched& l) { return l.raw.substr(0, 4000); }

void ExpectCaught(const Launched& l, const std::string& check) {
  ASSERT_EQ(l.result.status(), Result::CHEAT_DETECTED) << Describe(l);
  const auto* c = FindCheck(l.result, check);
  ASSERT_NE(c, nullptr) << check;
  EXPECT_FALSE(c->passed()) << c->detail();
}

// World sizes for the allreduce-based cheats: 1, and 2 when there are 2 GPUs.
std::vector<int> CheatWorlds() { return Gpus() >= 2 ? std::vector<int>{1, 2} : std::vector<int>{1}; }

// `pkforge-cuda-rank health --gpu N` (what the executor runs after a crash or
// timeout): its exit code; output printed for the log.
int Health(int gpu) {
  const std::string cmd = fmt::format("{} health --gpu {} 2>&1", PKF_CUDA_RANK, gpu);
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return -1;
  std::string out;
  char buf[1024];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int st = pclose(f);
  std::cout << "health --gpu " << gpu << ": " << out;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// Processes whose command line contains `needle` (a candidate's path appears
// in its rank processes' --candidate argument), after giving the kernel up to
// 5 s to finish tearing down GPU contexts.
int ProcessesMentioning(const std::string& needle) {
  int found = 0;
  for (int attempt = 0; attempt < 50; ++attempt) {
    found = 0;
    DIR* d = opendir("/proc");
    if (d == nullptr) return -1;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline", std::ios::binary);
      std::string cmdline((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (cmdline.find(needle) != std::string::npos) ++found;
    }
    closedir(d);
    if (found == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return found;
}

// One launch of a list run by LaunchAll.
struct Job {
  std::string problem, candidate, dtype;
  int world = 1;
  std::string extra;
  std::string Label() const { return fmt::format("{} {} w={} {}", problem, candidate, world, dtype); }
};

// Launches of correctness-only runs (`--skip-timing`), PKF_GPU_TEST_JOBS
// (default 1) at once, results in the order of `jobs`. Side by side they
// share the GPU, and the correctness trials' own outlived-call check (a
// device-wide synchronize right after the call, limit 5 ms) then waits for
// the other launches' work: on the H200 (2026-12-05) host_oracle_allreduce
// was OK alone and CHEAT_DETECTED outlived_call (12.4 ms) beside three
// others, 69 of 72 launches so. Parallel only for a quick look.
std::vector<Launched> LaunchAll(const std::vector<Job>& jobs) {
  const char* env = std::getenv("PKF_GPU_TEST_JOBS");
  const int parallel = std::max(1, env != nullptr ? std::atoi(env) : 1);
  std::vector<Launched> out(jobs.size());
  std::atomic<size_t> next{0};
  std::mutex print_mu;
  std::vector<std::thread> pool;
  for (int t = 0; t < parallel; ++t)
    pool.emplace_back([&] {
      for (size_t i = next++; i < jobs.size(); i = next++) {
        const Job& j = jobs[i];
        out[i] = Launch(j.problem, j.candidate, j.world, j.extra, j.dtype);
        // One line per launch as it ends (a slow or stuck one shows which).
        const std::string line =
            fmt::format("[{}/{}] {}: {} in {:.1f} s\n", i + 1, jobs.size(), j.Label(),
                        Result::Status_Name(out[i].result.status()), out[i].seconds);
        std::lock_guard<std::mutex> lock(print_mu);
        std::cout << line << std::flush;
      }
    });
  for (auto& t : pool) t.join();
  return out;
}

// The cuda reference agrees with the host oracle: the candidate is the host
// reference run on copies of the device inputs, compared by the cuda judge
// against the cuda reference with the problem's tolerance. Correctness only
// (the trials compare every output); the launches run side by side.
TEST(GpuEval, CudaReferenceMatchesHostOracleOnTiny) {
  REQUIRE_GPU();
  std::vector<Job> jobs;
  for (const Problem* p : Problems())
    for (const char* dt : {"bf16", "f16", "f32"})
      for (int w : Worlds(*p)) {
        if (w > 1 && std::string(dt) != "bf16") continue;  // every dtype at w=1, bf16 beyond
        jobs.push_back({std::string(p->name), "host_oracle_" + std::string(p->name), dt, w,
                        "--skip-timing"});
      }
  const auto results = LaunchAll(jobs);
  for (size_t i = 0; i < jobs.size(); ++i)
    EXPECT_EQ(results[i].result.status(), Result::OK) << jobs[i].Label() << "\n"
                                                      << Describe(results[i]);
}

// Every naive cuda candidate gets a full evaluation (correctness, timing and
// every check), one at a time.
TEST(GpuEval, EveryNaiveCudaCandidateIsOk) {
  REQUIRE_GPU();
  const char* dtypes[] = {"bf16", "f16", "f32"};
  int k = 0;
  for (const Problem* p : Problems()) {
    for (int w : Worlds(*p)) {
      const std::string dt = dtypes[k++ % 3];
      Launched l = Launch(std::string(p->name), "naive_cuda_" + std::string(p->name), w, "", dt);
      std::cout << fmt::format("{} w={} {}: {} speedup {:.3f} in {:.1f} s\n", p->name, w, dt,
                               Result::Status_Name(l.result.status()), l.result.speedup(),
                               l.seconds)
                << std::flush;
      EXPECT_EQ(l.result.status(), Result::OK) << p->name << " w=" << w << " " << dt << "\n"
                                               << Describe(l);
      if (l.result.status() != Result::OK) continue;
      EXPECT_EQ(l.exit_code, 0);
      EXPECT_EQ(l.result.backend(), pkforge::v1::BACKEND_CUDA);
      EXPECT_EQ(l.result.correctness().trials_passed(), 2);
      // --iters 6: 6 samples asked, a secret 0-2 more, and more while the
      // progress probes are unsettled (timing_schedule.h).
      EXPECT_GE(l.result.candidate().samples(), 6);
      EXPECT_LE(l.result.candidate().samples(), 8 + TimingSchedule::kExtensionSlots);
      for (const char* c : {"timed_output_reverify", "input_mutation", "outlived_call",
                            "poison_unwritten", "wallclock_crosscheck", "reference_isolation"}) {
        const auto* chk = FindCheck(l.result, c);
        ASSERT_NE(chk, nullptr) << c;
        EXPECT_TRUE(chk->passed()) << p->name << " " << c << ": " << chk->detail();
      }
    }
  }
}

// The reference as the candidate passes, bitwise deterministic (the
// determinism check is part of the correctness trials); side by side.
TEST(GpuEval, ReferenceAsCandidateIsOk) {
  REQUIRE_GPU();
  std::vector<Job> jobs;
  for (const Problem* p : Problems())
    jobs.push_back({std::string(p->name), "ref_cuda_" + std::string(p->name), "bf16", 1,
                    "--skip-timing"});
  const auto results = LaunchAll(jobs);
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(results[i].result.status(), Result::OK) << jobs[i].Label() << "\n"
                                                      << Describe(results[i]);
    const auto* det = FindCheck(results[i].result, "determinism");
    ASSERT_NE(det, nullptr) << jobs[i].Label();
    EXPECT_TRUE(det->passed()) << jobs[i].Label() << ": " << det->detail();
  }
}

TEST(GpuEval, ResultCarriesDeviceState) {
  REQUIRE_GPU();
  Launched l = Launch("allreduce", "naive_cuda_allreduce", 1);
  ASSERT_EQ(l.result.status(), Result::OK) << Describe(l);
  const auto& ds = l.result.device_state();
  EXPECT_FALSE(ds.cuda_toolkit_version().empty());
  EXPECT_FALSE(ds.nccl_version().empty());
  EXPECT_FALSE(ds.driver_version().empty());
  if (ds.gpus_size() > 0) {  // NVML present
    EXPECT_GT(ds.gpus(0).sm_clock_mhz(), 0);
    EXPECT_GT(ds.gpus(0).temperature_c(), 0);
  }
  EXPECT_GT(l.result.roofline().roofline_us(), 0);
}

TEST(GpuEval, SideStreamStillWritingAfterTheCallIsCaught) {
  REQUIRE_GPU();
  ExpectCaught(Launch("allreduce", "cheat_cuda_side_stream", 1), "outlived_call");
  if (Gpus() >= 2) ExpectCaught(Launch("allreduce", "cheat_cuda_side_stream", 2), "outlived_call");
}

TEST(GpuEval, CachingByPointerIsCaught) {
  REQUIRE_GPU();
  ExpectCaught(Launch("allreduce", "cheat_cuda_cache_by_pointer", 1), "timed_output_reverify");
}

TEST(GpuEval, MutatingInputsIsCaught) {
  REQUIRE_GPU();
  ExpectCaught(Launch("allreduce", "cheat_cuda_mutate_inputs", 1), "input_mutation");
}

TEST(GpuEval, DoingNothingAfterWarmupIsCaught) {
  REQUIRE_GPU();
  ExpectCaught(Launch("allreduce", "cheat_cuda_lazy_after_warmup", 1), "timed_output_reverify");
}

TEST(GpuEval, ForgedEventTimingIsCaughtByTheJudgesClock) {
  REQUIRE_GPU();
  ExpectCaught(Launch("allreduce", "cheat_cuda_forge_timing", 1), "wallclock_crosscheck");
}

TEST(GpuEval, CachingByContentNeverHits) {
  REQUIRE_GPU();
  // The candidate returns 99 if it ever sees input contents twice (beyond the
  // determinism re-run, which legitimately repeats the last trial's inputs).
  for (int w : CheatWorlds()) {
    Launched l = Launch("allreduce", "cheat_cuda_cache_by_content", w);
    EXPECT_EQ(l.result.status(), Result::OK) << "w=" << w << "\n" << Describe(l);
  }
}

TEST(GpuEval, PerturbedOutputIsWrongOutputWithDetails) {
  REQUIRE_GPU();
  for (int w : CheatWorlds()) {
    Launched l = Launch("allreduce", "cheat_cuda_wrong_perturb", w, "", "f32");
    ASSERT_EQ(l.result.status(), Result::WRONG_OUTPUT) << "w=" << w << "\n" << Describe(l);
    EXPECT_EQ(l.exit_code, 1);
    ASSERT_GE(l.result.correctness().checks_size(), 1);
    const auto& c = l.result.correctness().checks(0);
    EXPECT_EQ(c.rank(), w - 1);
    EXPECT_EQ(c.trial(), 0);
    EXPECT_EQ(c.output(), "y");
    EXPECT_EQ(c.mismatches(), 1);
    EXPECT_EQ(c.first_mismatch_index(), c.elements() / 2);
    EXPECT_NEAR(c.actual() - c.expected(), 0.5, 1e-4);
    EXPECT_FALSE(c.unwritten());
    EXPECT_EQ(c.first_mismatch_coords_size(), 2);
    EXPECT_NE(l.result.message().find("expected"), std::string::npos) << l.result.message();
  }
}

TEST(GpuEval, UnwrittenOutputIsDetectedByPoison) {
  REQUIRE_GPU();
  for (int w : CheatWorlds()) {
    Launched l = Launch("allreduce", "cheat_cuda_wrong_unwritten", w);
    ASSERT_EQ(l.result.status(), Result::WRONG_OUTPUT) << "w=" << w << "\n" << Describe(l);
    ASSERT_GE(l.result.correctness().checks_size(), 1);
    const auto& c = l.result.correctness().checks(0);
    EXPECT_TRUE(c.unwritten());
    EXPECT_EQ(c.mismatches(), 1);
    EXPECT_EQ(c.first_mismatch_index(), c.elements() - 1);
    EXPECT_TRUE(std::isnan(c.actual()));
    const auto* chk = FindCheck(l.result, "poison_unwritten");
    ASSERT_NE(chk, nullptr);
    EXPECT_FALSE(chk->passed());
  }
}

// A device fault is a RUNTIME_ERROR naming the rank, the phase and the CUDA
// error; the launcher returns promptly, leaves no rank process, and the GPU
// passes the executor's health check afterwards.
TEST(GpuEval, IllegalAddressIsRuntimeErrorNamingRankAndCudaError) {
  REQUIRE_GPU();
  for (int w : CheatWorlds()) {
    Launched l = Launch("allreduce", "cheat_cuda_crash_illegal_address", w);
    ASSERT_EQ(l.result.status(), Result::RUNTIME_ERROR) << "w=" << w << "\n" << Describe(l);
    EXPECT_EQ(l.exit_code, 1);
    ASSERT_GE(l.result.failures_size(), 1);
    const auto& f = l.result.failures(0);
    EXPECT_EQ(f.rank(), 0);
    EXPECT_EQ(f.phase(), pkforge::v1::PHASE_CORRECTNESS);
    EXPECT_NE(f.error().find("candidate rank 0"), std::string::npos) << f.error();
    EXPECT_NE(f.error().find("cudaErrorIllegalAddress"), std::string::npos) << f.error();
    EXPECT_NE(l.result.message().find("rank 0"), std::string::npos) << l.result.message();
    EXPECT_LT(l.seconds, 60);
    EXPECT_EQ(ProcessesMentioning("cheat_cuda_crash_illegal_address.so"), 0);
    for (int g = 0; g < w; ++g) EXPECT_EQ(Health(g), 0) << "gpu " << g;
  }
}

// A kernel that never ends (first timed iteration) is a TIMEOUT in
// PHASE_TIMING with the stuck rank inside the candidate's code; the launcher
// returns within the phase limit plus teardown, no rank process survives, and
// the GPU is healthy again once the context is gone.
TEST(GpuEval, HangingKernelIsTimeoutNamingThePhase) {
  REQUIRE_GPU();
  constexpr int kTimeoutS = 8;
  for (int w : CheatWorlds()) {
    Launched l = Launch("allreduce", "cheat_cuda_hang_kernel", w,
                        fmt::format("--timeout {}", kTimeoutS));
    ASSERT_EQ(l.result.status(), Result::TIMEOUT) << "w=" << w << "\n" << Describe(l);
    EXPECT_EQ(l.exit_code, 1);
    EXPECT_EQ(l.result.timeout().phase(), pkforge::v1::PHASE_TIMING);
    EXPECT_EQ(l.result.timeout().limit_s(), kTimeoutS);
    EXPECT_EQ(l.result.timeout().stuck_ranks_size(), w);
    EXPECT_FALSE(l.result.timeout().deadlock());
    ASSERT_GE(l.result.failures_size(), 1);
    EXPECT_NE(l.result.failures(0).error().find("inside the candidate's code"), std::string::npos)
        << l.result.failures(0).error();
    EXPECT_NE(l.result.message().find("PHASE_TIMING"), std::string::npos) << l.result.message();
    // Setup and correctness (each well under the limit), the timing phase's
    // limit, then killing and reaping.
    EXPECT_LT(l.seconds, 3 * kTimeoutS + 20);
    std::cout << fmt::format("w={}: TIMEOUT returned after {:.1f} s (limit {} s per phase)\n", w,
                             l.seconds, kTimeoutS);
    EXPECT_EQ(ProcessesMentioning("cheat_cuda_hang_kernel.so"), 0);
    for (int g = 0; g < w; ++g) EXPECT_EQ(Health(g), 0) << "gpu " << g;
  }
}

TEST(GpuEval, SecretsAreNotInTheCandidateProcess) {
  REQUIRE_GPU();
  // World size 1 only: at larger sizes NCCL may stage reduced data through
  // host shared memory (no P2P), which the scanner would rightly find.
  const std::string seeds = ::testing::TempDir() + "/cuda_seeds.txt";
  Launched l =
      Launch("allreduce", "cheat_cuda_scan_secrets", 1, "--reveal-seeds-after " + seeds, "f32");
  // 97: it found a seed or reference outputs; 98: its scanner failed the positive control.
  EXPECT_EQ(l.result.status(), Result::OK) << Describe(l);
  std::ifstream f(seeds);
  int n = 0;
  std::string line;
  while (std::getline(f, line)) ++n;
  EXPECT_GT(n, 2);  // the seeds existed (in the judge and reference ranks only)
  const auto* c = FindCheck(l.result, "reference_isolation");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->passed());
}

TEST(GpuEval, HostThreadLaunchingAfterTheCallIsCaught) {
  REQUIRE_GPU();
  for (int w : CheatWorlds()) {
    Launched l = Launch("allreduce", "cheat_cuda_detached_thread", w);
    ExpectCaught(l, "outlived_call");
    if (const auto* c = FindCheck(l.result, "outlived_call")) std::cout << c->detail() << "\n";
  }
}

// Evaluates in well under the 3 s target at world size 1 (5 trials + timing).
TEST(GpuEval, OneEvaluationAtWorldSize1IsFast) {
  REQUIRE_GPU();
  const std::string cmd = fmt::format(
      "{} launch --problem allreduce --backend cuda --world-size 1 --size tiny --json "
      "{}/naive_cuda_allreduce.so > /dev/null",
      PKF_WORKER, PKF_CANDIDATES);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("seconds", std::to_string(s));
  EXPECT_LT(s, 10.0);  // target 3 s; generous here, the bench reports the number
}

// --precise-timing: 2 GiB of input sets per side and GPU instead of 512 MiB.
// broadcast at the default size (4 MiB a set): 128 sets and batches of 128
// calls without it (H100, session 17), 512 with it; the result says so.
TEST(GpuEval, PreciseTimingDrawsOnMoreInputSets) {
  REQUIRE_GPU();
  auto sets_of = [](const std::string& extra, Result* r) {
    const std::string cmd = fmt::format(
        "{} launch --problem broadcast --backend cuda --world-size 1 --dtype bf16 --size default "
        "--trials 2 --warmup 1 --iters 6 {} --json {}/ref_cuda_broadcast.so",
        PKF_WORKER, extra, PKF_CANDIDATES);
    std::string raw;
    FILE* f = popen(cmd.c_str(), "r");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) raw.append(buf, n);
    pclose(f);
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(raw, r).ok()) << cmd << "\n" << raw;
    const size_t at = r->message().rfind('(');
    return at == std::string::npos ? -1 : std::atoi(r->message().c_str() + at + 1);
  };
  Result plain, precise;
  const int a = sets_of("", &plain), b = sets_of("--precise-timing", &precise);
  ASSERT_EQ(plain.status(), Result::OK) << plain.message();
  ASSERT_EQ(precise.status(), Result::OK) << precise.message();
  EXPECT_FALSE(plain.precise_timing());
  EXPECT_TRUE(precise.precise_timing());
  EXPECT_GT(a, 0) << plain.message();
  EXPECT_GE(b, 3 * a) << plain.message() << " / " << precise.message();
  RecordProperty("sets", fmt::format("{} -> {}", a, b));
}

}  // namespace
}  // namespace pkforge::kernels
