// End-to-end tests of the cuda backend (ctest label gpu). Every test skips
// when no GPU is usable (CI builds with nvcc but has no GPU). World sizes
// beyond 1 run when the machine has that many GPUs.
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "kernels/harness/cuda_probe.h"
#include "kernels/harness/problem.h"
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
      "--warmup 2 --iters 6 --timeout 120 --json {} {}/{}.so",
      PKF_WORKER, problem, world, dtype, extra, PKF_CANDIDATES, candidate);
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

// The cuda reference agrees with the host oracle: the candidate is the host
// reference run on copies of the device inputs, compared by the cuda judge
// against the cuda reference with the problem's tolerance.
TEST(GpuEval, CudaReferenceMatchesHostOracleOnTiny) {
  REQUIRE_GPU();
  for (const Problem* p : Problems()) {
    for (const char* dt : {"bf16", "f16", "f32"}) {
      for (int w : Worlds(*p)) {
        if (w > 1 && std::string(dt) != "bf16") continue;  // every dtype at w=1, bf16 beyond
        Launched l = Launch(std::string(p->name), "host_oracle_" + std::string(p->name), w, "", dt);
        EXPECT_EQ(l.result.status(), Result::OK)
            << p->name << " w=" << w << " " << dt << "\n" << Describe(l);
      }
    }
  }
}

TEST(GpuEval, EveryNaiveCudaCandidateIsOk) {
  REQUIRE_GPU();
  const char* dtypes[] = {"bf16", "f16", "f32"};
  int k = 0;
  for (const Problem* p : Problems()) {
    for (int w : Worlds(*p)) {
      const std::string dt = dtypes[k++ % 3];
      Launched l = Launch(std::string(p->name), "naive_cuda_" + std::string(p->name), w, "", dt);
      ASSERT_EQ(l.result.status(), Result::OK) << p->name << " w=" << w << " " << dt << "\n"
                                               << Describe(l);
      EXPECT_EQ(l.exit_code, 0);
      EXPECT_EQ(l.result.backend(), pkforge::v1::BACKEND_CUDA);
      EXPECT_EQ(l.result.correctness().trials_passed(), 2);
      EXPECT_EQ(l.result.candidate().samples(), 6);
      for (const char* c : {"timed_output_reverify", "input_mutation", "outlived_call",
                            "poison_unwritten", "wallclock_crosscheck", "reference_isolation"}) {
        const auto* chk = FindCheck(l.result, c);
        ASSERT_NE(chk, nullptr) << c;
        EXPECT_TRUE(chk->passed()) << p->name << " " << c << ": " << chk->detail();
      }
    }
  }
}

TEST(GpuEval, ReferenceAsCandidateIsOk) {
  REQUIRE_GPU();
  for (const Problem* p : Problems()) {
    Launched l = Launch(std::string(p->name), "ref_cuda_" + std::string(p->name), 1, "", "bf16");
    ASSERT_EQ(l.result.status(), Result::OK) << p->name << "\n" << Describe(l);
    const auto* det = FindCheck(l.result, "determinism");
    ASSERT_NE(det, nullptr);
    EXPECT_TRUE(det->passed()) << p->name << ": " << det->detail();
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

}  // namespace
}  // namespace pkforge::kernels
