// End-to-end tests of the host backend: the real pkforge-worker binary
// evaluates candidates compiled at test-build time (kernels/CMakeLists.txt).
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "google/protobuf/util/json_util.h"
#include "kernels/harness/cuda_probe.h"
#include "kernels/harness/problem.h"
#include "kernels/harness/rank.h"
#include "kernels/harness/timing_schedule.h"
#include "pkforge/v1/common.pb.h"

namespace pkforge::kernels {
namespace {

using Result = pkforge::v1::EvaluationResult;

struct Launched {
  int exit_code = -1;
  double seconds = 0;
  Result result;
  std::string raw;
};

// Runs `cmd` through the shell; its exit status (as pclose returns it) and
// everything it printed on stdout.
struct Captured {
  int status = -1;
  std::string output;
};
Captured RunCapture(const std::string& cmd) {
  Captured c;
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return c;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) c.output.append(buf, n);
  c.status = pclose(f);
  return c;
}

Launched Launch(const std::string& problem, const std::string& candidate, int world,
                const std::string& extra = "", const std::string& dtype = "bf16") {
  const std::string cmd = fmt::format(
      "{} launch --problem {} --backend host --world-size {} --dtype {} {} --trials 2 "
      "--warmup 2 {} {} --json {} {}/{}.so",
      PKF_WORKER, problem, world, dtype,
      extra.find("--size") == std::string::npos ? "--size tiny" : "",
      extra.find("--iters") == std::string::npos ? "--iters 6" : "",
      extra.find("--timeout") == std::string::npos ? "--timeout 30" : "", extra, PKF_CANDIDATES,
      candidate);
  Launched l;
  const auto t0 = std::chrono::steady_clock::now();
  const Captured run = RunCapture(cmd);
  l.raw = run.output;
  const int st = run.status;
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

std::string Describe(const Launched& l) { return l.raw.substr(0, 3000); }

// Whether output 0 of `p` has a fixed integer dtype (tiny, world `w`).
bool IntegerOutput0(const Problem& p, int w) {
  const auto dims = ResolveSize(p, "tiny", w);
  if (!dims.ok()) return false;
  const RankSpec s = p.spec(*dims, w, 0);
  return !s.out.empty() && s.out[0].dtype.has_value() && IsIntegerDtype(*s.out[0].dtype);
}

TEST(HostEval, EveryNaiveCandidateIsOkAtWorldSizes1To8) {
  const char* dtypes[] = {"bf16", "f16", "f32"};
  int k = 0;
  for (const Problem* p : Problems()) {
    for (int w : {1, 2, 3, 4, 8}) {
      const std::string dt = dtypes[k++ % 3];
      Launched l = Launch(std::string(p->name), "naive_host_" + std::string(p->name), w, "", dt);
      ASSERT_EQ(l.result.status(), Result::OK) << p->name << " w=" << w << " " << dt << "\n"
                                               << Describe(l);
      EXPECT_EQ(l.exit_code, 0);
      EXPECT_EQ(l.result.correctness().trials_passed(), 2);
      // --iters 6: 6 samples asked, a secret 0-2 more, and more while the
      // progress probes are unsettled (timing_schedule.h).
      EXPECT_GE(l.result.candidate().samples(), 6);
      EXPECT_LE(l.result.candidate().samples(), 8 + TimingSchedule::kExtensionSlots);
      // Every sample says which side ran first in its pair, opposite sides.
      ASSERT_EQ(l.result.candidate().first_in_pair_size(), l.result.candidate().samples_us_size());
      ASSERT_EQ(l.result.reference().first_in_pair_size(), l.result.candidate().first_in_pair_size());
      for (int i = 0; i < l.result.candidate().first_in_pair_size(); ++i)
        EXPECT_NE(l.result.candidate().first_in_pair(i), l.result.reference().first_in_pair(i));
      EXPECT_TRUE(l.result.has_speedup());
      EXPECT_GT(l.result.roofline().roofline_us(), 0);
      for (const char* c : {"timed_output_reverify", "input_mutation", "outlived_call",
                            "poison_unwritten", "determinism", "wallclock_crosscheck",
                            "reference_isolation", "static_scan", "speedup_plausibility",
                            "batch_progress", "batch_drip"}) {
        const auto* chk = FindCheck(l.result, c);
        ASSERT_NE(chk, nullptr) << c;
        if (!chk->flag_only()) {
          EXPECT_TRUE(chk->passed()) << p->name << " " << c << ": " << chk->detail();
        }
      }
    }
  }
}

// A busy process pinned on the CPU the judge gives the ranks (the second of
// its set when it has two or more, else the only one), from this process.
struct BusyLoopOnRankCpu {
  pid_t pid = -1;
  BusyLoopOnRankCpu() {
    cpu_set_t own;
    CPU_ZERO(&own);
    if (sched_getaffinity(0, sizeof own, &own) != 0) return;
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &own)) cpus.push_back(c);
    if (cpus.empty()) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[cpus.size() > 1 ? 1 : 0], &one);
    pid = fork();
    if (pid == 0) {
      sched_setaffinity(0, sizeof one, &one);
      for (;;) asm volatile("" ::: "memory");
    }
  }
  ~BusyLoopOnRankCpu() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// helper-redteam11: at world size 1 beside a busy loop on the ranks' CPU, one
// of its time slices landed in most of the reference's free-running batches
// next to a drip batch (24 us a call against 1 us), the hand-off cost read 0
// and honest candidates were CHEAT_DETECTED batch_drip in 3-5 of 6 launches.
// An honest candidate is never convicted, and identical code does not read
// many times faster in every launch: the reference's clock ended at a stop
// that waited for the busy loop's whole time slice (~3.6 ms) while the
// candidate's did not, so every launch read 5.7-13x (rank_pool.cc
// RefTimedRound; 0.80-0.95x since, alone). With other tests running beside
// it (ctest -j2) single launches still read anything from 0.3x to 13x, so
// only the least of four is bounded.
TEST(HostEval, HonestCandidatesAreNotConvictedBesideABusyLoopOnTheirCpu) {
  BusyLoopOnRankCpu busy;
  ASSERT_GT(busy.pid, 0);
  double least = 1e9;
  std::string all;
  for (int i = 0; i < 4; ++i) {
    Launched l = Launch("allreduce", "naive_host_allreduce", 1, "", "f32");
    EXPECT_EQ(l.result.status(), Result::OK) << "launch " << i << "\n" << Describe(l);
    least = std::min(least, l.result.speedup());
    all += fmt::format(" {:.2f}x", l.result.speedup());
  }
  EXPECT_LT(least, 3.0) << "speedups:" << all;
}

// PKFORGE_TIMING_DIAG=1: where an evaluation's time goes, per command kind
// and side (RankPool::PrintRoundDiag), on stderr; the verdict on stdout is
// unchanged. Without the variable, none of it.
TEST(HostEval, TimingDiagnosisNamesEachCommandsRoundsAndTime) {
  const std::string cmd = fmt::format(
      "{} launch --problem allreduce --backend host --world-size 2 --dtype f32 --size tiny "
      "--trials 1 --warmup 1 --iters 4 --timeout 30 --json {}/naive_host_allreduce.so",
      PKF_WORKER, PKF_CANDIDATES);
  const Captured diag = RunCapture("PKFORGE_TIMING_DIAG=1 " + cmd + " 2>&1 >/dev/null");
  ASSERT_EQ(diag.status, 0) << diag.output;
  for (const char* line : {"round-diag ref  batch ", "round-diag cand batch ",
                           "round-diag ref  gen ", "round-diag ref  check "})
    EXPECT_NE(diag.output.find(line), std::string::npos) << line << "\n" << diag.output;
  EXPECT_NE(diag.output.find("phase timing"), std::string::npos) << diag.output;
  const Captured quiet = RunCapture("env -u PKFORGE_TIMING_DIAG " + cmd + " 2>&1 >/dev/null");
  EXPECT_EQ(quiet.output.find("round-diag"), std::string::npos) << quiet.output;
}

// --precise-timing is a cuda option: the worker refuses it on the host (and
// without timing) before anything runs, saying why.
// At world size 1, tiny, calls take ~1.4 us: with the 128 input sets of
// other world sizes a batch was ~180 us, hardly longer than the probes'
// start allowance, and no probe was ever conclusive ("not judged" in 12 of
// 12 launches). With up to 1024 sets the batches are long enough to be
// probed: most launches judge their probes (a launch may still say "not
// judged" when load or a late stop made every probe inconclusive).
TEST(HostEval, WorldSizeOneBatchesAreLongEnoughToBeProbed) {
  int judged = 0;
  std::string details;
  for (int i = 0; i < 6; ++i) {
    const Launched l = Launch("allreduce", "naive_host_allreduce", 1, "", "f32");
    ASSERT_EQ(l.result.status(), Result::OK) << Describe(l);
    const auto* c = FindCheck(l.result, "batch_progress");
    ASSERT_NE(c, nullptr) << Describe(l);
    if (c->detail().find("not judged") == std::string::npos &&
        c->detail().find("not probed") == std::string::npos)
      ++judged;
    details += c->detail() + "\n";
  }
  EXPECT_GE(judged, 2) << details;
}

// The one loader both ranks use (host and cuda): the entry points of a real
// candidate, and errors that name their cause.
TEST(HostEval, LoadCandidateFindsTheEntryPointsOrNamesWhyNot) {
  auto ok = LoadCandidate(std::string(PKF_CANDIDATES) + "/naive_host_allreduce.so");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_NE(ok->run, nullptr);
  auto missing = LoadCandidate("/nonexistent/candidate.so");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message().substr(0, 7), "dlopen:") << missing.status();
  auto no_run = LoadCandidate("libm.so.6");  // a real library without pkf_run
  ASSERT_FALSE(no_run.ok());
  EXPECT_EQ(no_run.status().message(), "candidate does not export pkf_run");
}

TEST(HostEval, PreciseTimingIsRefusedOnTheHost) {
  const std::string base = fmt::format(
      "{} launch --problem allreduce --backend host --world-size 2 --dtype f32 --size tiny "
      "--json {}/naive_host_allreduce.so --precise-timing",
      PKF_WORKER, PKF_CANDIDATES);
  Captured c = RunCapture(base + " 2>&1");
  ASSERT_TRUE(WIFEXITED(c.status));
  EXPECT_EQ(WEXITSTATUS(c.status), 2) << c.output;
  EXPECT_NE(c.output.find("--precise-timing: needs --backend cuda"), std::string::npos) << c.output;
  c = RunCapture(fmt::format(
      "{} launch --problem allreduce --backend cuda --world-size 1 --skip-timing --json "
      "{}/naive_host_allreduce.so --precise-timing 2>&1",
      PKF_WORKER, PKF_CANDIDATES));
  EXPECT_NE(c.output.find("--precise-timing: needs timing"), std::string::npos) << c.output;
}

TEST(HostEval, PerturbedOutputIsWrongOutputWithDetails) {
  for (const Problem* p : Problems()) {
    for (int w : {1, 3}) {
      Launched l = Launch(std::string(p->name), "wrong_perturb_" + std::string(p->name), w, "", "f32");
      ASSERT_EQ(l.result.status(), Result::WRONG_OUTPUT) << p->name << "\n" << Describe(l);
      ASSERT_GE(l.result.correctness().checks_size(), 1);
      const auto& c = l.result.correctness().checks(0);
      const bool root_only = p->name == "reduce" || p->name == "gather";
      EXPECT_EQ(c.rank(), root_only ? 0 : w - 1) << p->name;
      EXPECT_EQ(c.trial(), 0);
      EXPECT_EQ(c.mismatches(), 1) << p->name;
      EXPECT_EQ(c.first_mismatch_index(), c.elements() / 2) << p->name;
      // wrong_perturb adds 1 to an integer output (ids, counts), 0.5 to a float one.
      EXPECT_NEAR(c.actual() - c.expected(), IntegerOutput0(*p, w) ? 1.0 : 0.5, 1e-4) << p->name;
      EXPECT_FALSE(c.unwritten());
      // One coordinate per dimension of the output (4 for NCHW images).
      const auto dims = ResolveSize(*p, "tiny", w);
      ASSERT_TRUE(dims.ok()) << dims.status();
      EXPECT_EQ(c.first_mismatch_coords_size(),
                static_cast<int>(p->spec(*dims, w, c.rank()).out[0].shape.size()))
          << p->name;
      EXPECT_NE(l.result.message().find("expected"), std::string::npos);
    }
  }
}

TEST(HostEval, UnwrittenOutputIsDetectedByPoison) {
  for (const Problem* p : Problems()) {
    Launched l = Launch(std::string(p->name), "wrong_unwritten_" + std::string(p->name), 2);
    ASSERT_EQ(l.result.status(), Result::WRONG_OUTPUT) << p->name << "\n" << Describe(l);
    const auto& c = l.result.correctness().checks(0);
    EXPECT_TRUE(c.unwritten());
    EXPECT_EQ(c.first_mismatch_index(), c.elements() - 1);
    if (IntegerOutput0(*p, 2)) {
      EXPECT_LT(c.actual(), 0) << p->name;  // 0xa5 bytes: a negative integer, never an id
    } else {
      EXPECT_TRUE(std::isnan(c.actual())) << p->name;
    }
    const auto* chk = FindCheck(l.result, "poison_unwritten");
    ASSERT_NE(chk, nullptr);
    EXPECT_FALSE(chk->passed());
  }
}

TEST(HostEval, CrashOnOneRankIsRuntimeErrorNamingTheRank) {
  Launched l = Launch("allreduce", "cheat_crash_rank", 3);
  ASSERT_EQ(l.result.status(), Result::RUNTIME_ERROR) << Describe(l);
  ASSERT_GE(l.result.failures_size(), 1);
  EXPECT_EQ(l.result.failures(0).rank(), 2);
  EXPECT_EQ(l.result.failures(0).signal(), 11);
  EXPECT_EQ(l.result.failures(0).phase(), pkforge::v1::PHASE_CORRECTNESS);
  EXPECT_NE(l.result.message().find("candidate rank 2"), std::string::npos);
}

// The judge drops secret-looking variables (API keys, tokens) from the rank
// processes' environment, a second line of defence behind the sandbox, but
// lets NVIDIA tools' NV_* plumbing through (ncu's NV_TPS_LAUNCH_TOKEN).
TEST(HostEval, OperatorSecretsNeverReachTheCandidateButToolVariablesDo) {
  setenv("PKF_TEST_OPENAI_API_KEY", "sk-planted-secret", 1);
  setenv("NV_TPS_LAUNCH_TOKEN", "Interactive Profile", 1);
  Launched l = Launch("allreduce", "cheat_read_env_secret", 2);
  unsetenv("PKF_TEST_OPENAI_API_KEY");
  unsetenv("NV_TPS_LAUNCH_TOKEN");
  EXPECT_EQ(l.result.status(), Result::OK) << Describe(l);
  EXPECT_EQ(l.raw.find("sk-planted-secret"), std::string::npos);
}

// A descriptor the worker's caller left open without close-on-exec never
// reaches a rank (red team round 7: a shell's fds 10 and 251 were open in
// every candidate rank of a bare launch).
TEST(HostEval, DescriptorsOfTheWorkersCallerNeverReachTheCandidate) {
  const int fd = open("/dev/null", O_RDONLY);  // no O_CLOEXEC: popen's shell inherits it
  ASSERT_GE(fd, 0);
  ASSERT_EQ(dup2(fd, 777), 777);
  close(fd);
  Launched l = Launch("allreduce", "cheat_inherited_fd", 2);
  close(777);
  EXPECT_EQ(l.result.status(), Result::OK) << Describe(l);
}

TEST(HostEval, DeadlockIsTimeoutNamingPhaseAndStuckRank) {
  Launched l = Launch("allreduce", "cheat_deadlock", 3, "--timeout 2");
  ASSERT_EQ(l.result.status(), Result::TIMEOUT) << Describe(l);
  EXPECT_EQ(l.result.timeout().phase(), pkforge::v1::PHASE_CORRECTNESS);
  ASSERT_EQ(l.result.timeout().stuck_ranks_size(), 1);
  EXPECT_EQ(l.result.timeout().stuck_ranks(0), 2);
  EXPECT_TRUE(l.result.timeout().deadlock());
  EXPECT_NE(l.result.message().find("ranks 2 wait in the barrier for peers that never arrive"),
            std::string::npos)
      << l.result.message();
  EXPECT_LT(l.seconds, 10);  // bounded: everything killed and reaped
}

// An honest candidate whose timing phase needs more than the phase limit
// (host, default size, calls of ~6 ms, and --iters 1000: far more batches than
// 8 s hold) is stopped, but the message says what happened instead of calling
// it a deadlock. The limit leaves set-up room under load: at --timeout 3 with
// ~5 s of timing, a full ctest -j2 beside the deploy tests once ran out of it
// in PHASE_SETUP (session 15).
TEST(HostEval, ATimingPhaseLongerThanItsLimitIsNotCalledADeadlock) {
  Launched l =
      Launch("allreduce", "naive_host_allreduce", 3, "--size default --iters 1000 --timeout 8");
  ASSERT_EQ(l.result.status(), Result::TIMEOUT) << Describe(l);
  EXPECT_EQ(l.result.timeout().phase(), pkforge::v1::PHASE_TIMING);
  EXPECT_EQ(l.result.message().find("never arrive"), std::string::npos) << l.result.message();
  EXPECT_NE(l.result.message().find("raise --timeout"), std::string::npos) << l.result.message();
}

TEST(HostEval, SetupFailureIsSetupError) {
  Launched l = Launch("allreduce", "cheat_setup_fails", 2);
  EXPECT_EQ(l.result.status(), Result::SETUP_ERROR) << Describe(l);
}

TEST(HostEval, CachingByPointerIsCaught) {
  Launched l = Launch("allreduce", "cheat_cache_by_pointer", 2);
  ASSERT_EQ(l.result.status(), Result::CHEAT_DETECTED) << Describe(l);
  const auto* c = FindCheck(l.result, "timed_output_reverify");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->passed());
}

TEST(HostEval, CachingByContentNeverHits) {
  // The candidate returns 99 if it ever sees input contents twice.
  Launched l = Launch("allreduce", "cheat_cache_by_content", 2);
  EXPECT_EQ(l.result.status(), Result::OK) << Describe(l);
}

TEST(HostEval, WorkInDetachedThreadIsCaught) {
  Launched l = Launch("allreduce", "cheat_detached_thread", 2);
  ASSERT_EQ(l.result.status(), Result::CHEAT_DETECTED) << Describe(l);
  const auto* c = FindCheck(l.result, "outlived_call");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->passed());
}

TEST(HostEval, DoingNothingAfterWarmupIsCaught) {
  Launched l = Launch("allreduce", "cheat_lazy_after_warmup", 2);
  ASSERT_EQ(l.result.status(), Result::CHEAT_DETECTED) << Describe(l);
  const auto* c = FindCheck(l.result, "timed_output_reverify");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->passed());
}

TEST(HostEval, MutatingInputsIsCaught) {
  Launched l = Launch("allreduce", "cheat_mutate_inputs", 2);
  ASSERT_EQ(l.result.status(), Result::CHEAT_DETECTED) << Describe(l);
  const auto* c = FindCheck(l.result, "input_mutation");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->passed());
}

TEST(HostEval, ForgedTimingIsCaughtByTheJudgesClock) {
  Launched l = Launch("allreduce", "cheat_forge_timing", 2);
  ASSERT_EQ(l.result.status(), Result::CHEAT_DETECTED) << Describe(l);
  const auto* c = FindCheck(l.result, "wallclock_crosscheck");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->passed());
}

TEST(HostEval, SecretsAreNotInTheCandidateProcess) {
  const std::string seeds = ::testing::TempDir() + "/seeds.txt";
  Launched l = Launch("allreduce", "cheat_scan_secrets", 2, "--reveal-seeds-after " + seeds, "f32");
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

TEST(HostEval, ForbiddenCallIsFlaggedNotFailed) {
  Launched l = Launch("allreduce", "cheat_forbidden_call", 1, "--forbid sched_yield,ncclAllReduce");
  ASSERT_EQ(l.result.status(), Result::OK) << Describe(l);
  const auto* c = FindCheck(l.result, "static_scan");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->passed());
  EXPECT_TRUE(c->flag_only());
  EXPECT_NE(c->detail().find("sched_yield"), std::string::npos);
  EXPECT_EQ(c->detail().find("ncclAllReduce"), std::string::npos);
}

TEST(CudaBackend, NoGpuIsAClearErrorNotACrash) {
  if (ProbeCudaDevices().ok()) GTEST_SKIP() << "a GPU is usable here (kernels_gpu_test covers cuda)";
  const std::string cmd = fmt::format(
      "{} launch --problem allreduce --backend cuda --world-size 1 --size tiny {}/naive_host_allreduce.so 2>&1",
      PKF_WORKER, PKF_CANDIDATES);
  const auto [st, raw] = RunCapture(cmd);
  ASSERT_TRUE(WIFEXITED(st)) << raw;  // not killed by a signal
  EXPECT_EQ(WEXITSTATUS(st), 2) << raw;  // invalid request, like any unusable backend
  EXPECT_NE(raw.find("backend cuda"), std::string::npos) << raw;
  EXPECT_TRUE(raw.find("no usable GPU") != std::string::npos ||
              raw.find("not available in this build") != std::string::npos) << raw;
}

TEST(HostEval, ListPrintsTheRegistry) {
  const auto [st, raw] = RunCapture(fmt::format("{} list --json", PKF_WORKER));
  EXPECT_EQ(st, 0);
  pkforge::v1::ListProblemsResponse resp;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(raw, &resp).ok());
  EXPECT_EQ(resp.problems_size(), static_cast<int>(Problems().size()));
  EXPECT_NE(resp.problems(0).statement_markdown().find("allreduce"), std::string::npos);
}

// The harness benchmark with the position diagnostic: one row per problem and
// a "by position" line with four positive medians whose ratios are the ones
// printed (to the rounding of the printed times; it reads the per-iteration
// samples by first_in_pair: which side goes first is drawn per pair).
TEST(HostEval, BenchPrintsSpeedupAndTimesByPosition) {
  const auto [st, raw] = RunCapture(
      fmt::format("{} bench --backend host --candidates {} --world-size 2 --size tiny "
                  "--repeats 2 --problems allreduce --positions 2>&1",
                  PKF_WORKER, PKF_CANDIDATES));
  ASSERT_EQ(st, 0) << raw;
  ASSERT_NE(raw.find("\nallreduce "), std::string::npos) << raw;
  const size_t at = raw.find("by position (us): ");
  ASSERT_NE(at, std::string::npos) << raw;
  double rf = 0, rs = 0, cf = 0, cs = 0, r1 = 0, r2 = 0;
  ASSERT_EQ(std::sscanf(raw.c_str() + at,
                        "by position (us): ref first %lf, ref second %lf | cand first %lf, cand "
                        "second %lf | ref first / cand second %lf, ref second / cand first %lf",
                        &rf, &rs, &cf, &cs, &r1, &r2),
            6)
      << raw;
  for (double v : {rf, rs, cf, cs}) EXPECT_GT(v, 0) << raw;
  EXPECT_NEAR(r1, rf / cs, 0.002 + 0.01 * r1) << raw;
  EXPECT_NEAR(r2, rs / cf, 0.002 + 0.01 * r2) << raw;
}

}  // namespace
}  // namespace pkforge::kernels
