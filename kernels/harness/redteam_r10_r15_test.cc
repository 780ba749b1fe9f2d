// The red-team battery, continued (redteam_test.cc has the scheme): the output
// policy self-test over every problem, then rounds 10 to 15 (kernel work a frozen
// candidate scheduled, the timing schedule, the result channel, the executor path).
#include <dirent.h>
#include <stdlib.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include <cstdio>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "gtest/gtest.h"
#include "kernels/harness/launch_test_util.h"
#include "kernels/harness/problem.h"
#include "kernels/harness/protocol.h"
#include "kernels/harness/redteam_test_util.h"

namespace pkforge::kernels {
// The battery's vocabulary (Expect, Accept, RT, cgroups), in every block below.
using namespace redteam;  // NOLINT(build/namespaces)
namespace {

// ---- output policy self-test, every problem ------------------------------------------------
// All-zero outputs and outputs that repeat the rank's first input must be
// rejected by every problem, dtype and world size 1 and 3 (a problem that
// accepts one cannot tell a do-nothing candidate from a real one). Returns
// the combinations that did not give WRONG_OUTPUT.
// min_world_for_policy: at world size 1 a collective's answer *is* its
// input (allreduce, broadcast, ... of one rank), so the input-copy policy
// applies from world size 2 (the all-zeros policy applies everywhere).
std::vector<std::string> PolicyAccepted(const std::string& candidate, int min_world_for_policy = 1) {
  std::vector<std::string> accepted;
  for (const Problem* p : Problems()) {
    for (const char* dt : {"bf16", "f16", "f32"}) {
      for (int w : {1, 3}) {
        if (w < p->min_world || w > p->max_world || w < min_world_for_policy) continue;
        const std::string dir = NewDir("policy");
        const std::string cmd = fmt::format(
            "timeout -k 5 60 {} launch --problem {} --backend host --world-size {} --dtype {} "
            "--size tiny --trials 1 --skip-timing --timeout 10 --json {}/redteam_{}_{}.so",
            PKF_WORKER, p->name, w, dt, PKF_CANDIDATES, candidate, p->name);
        const Verdict v = RunJudge(cmd, dir + "/judge_stderr");
        EXPECT_TRUE(v.parsed) << v.channel_error << "\n" << cmd << "\n" << v.stderr_text;
        EXPECT_NE(v.result.status(), Result::HARNESS_ERROR) << cmd << "\n" << v.raw;
        if (v.parsed && v.result.status() != Result::WRONG_OUTPUT)
          accepted.push_back(fmt::format("{} {} w={} -> {}", p->name, dt, w,
                                         Result::Status_Name(v.result.status())));
      }
    }
  }
  return accepted;
}

// Every output tensor is verified: a rank's reply carries at most
// kMaxOutputs check records (rank.cc / rank_cuda_checks.cc Check: n_checks =
// min(outputs, kMaxOutputs)), so outputs past the 4th of a problem would
// never be compared and a candidate could leave them unwritten and pass
// (moe_token_preprocess has exactly 4 today). Guards every problem added
// to the registry, at every world size it allows up to 8.
TEST(RedTeam, EveryOutputTensorIsVerified) {
  std::vector<std::string> unchecked;
  for (const Problem* p : Problems()) {
    for (int w = std::max(1, p->min_world); w <= std::min(8, p->max_world); ++w) {
      auto dims = ResolveSize(*p, "tiny", w);
      if (!dims.ok()) continue;
      for (int r = 0; r < w; ++r) {
        const RankSpec spec = p->spec(*dims, w, r);
        if (spec.out.size() > static_cast<size_t>(kMaxOutputs))
          unchecked.push_back(fmt::format("{} w={} rank {}: {} outputs", p->name, w, r,
                                          spec.out.size()));
      }
    }
  }
  EXPECT_TRUE(unchecked.empty()) << "outputs past the " << kMaxOutputs
                                 << "th are never verified:\n  "
                                 << fmt::format("{}", fmt::join(unchecked, "\n  "));
}

TEST(RedTeam, OutputPolicyEveryProblemRejectsZeros) {
  const std::vector<std::string> accepted = PolicyAccepted("zeros");
  EXPECT_TRUE(accepted.empty()) << accepted.size()
                                << " problem/dtype/world combinations accepted all-zero outputs:\n  "
                                << fmt::format("{}", fmt::join(accepted, "\n  "));
}

// Note: at world size 1 the result of every pure collective (allreduce,
// allgather, reducescatter, alltoall, broadcast, reduce, gather, scatter) IS
// the rank's input, so this policy, as issue 16 states it, cannot hold there
// without rejecting correct candidates; the test asserts it as stated and
// the failure lists exactly those combinations (README.md, findings).
TEST(RedTeam, OutputPolicyEveryProblemRejectsInputCopies) {
  const std::vector<std::string> accepted = PolicyAccepted("copy_inputs", /*min_world=*/2);
  EXPECT_TRUE(accepted.empty()) << accepted.size()
                                << " problem/dtype/world combinations accepted outputs that repeat "
                                   "the first input:\n  "
                                << fmt::format("{}", fmt::join(accepted, "\n  "));
}

// Lower precision than the dtype: every compute problem's reference with its
// loads rounded to bf16, evaluated at f32, must be rejected.
TEST(RedTeam, OutputPolicyBf16LoadsOnF32AreRejected) {
  std::vector<std::string> accepted;
  for (const char* p : {"allreduce", "reducescatter", "reduce", "allgather_gemm", "gemm_allreduce",
                        "gemm_reducescatter", "tp_rmsnorm"}) {
    for (int w : {1, 3}) {
      const std::string dir = NewDir("lowp");
      const std::string cmd = fmt::format(
          "timeout -k 5 60 {} launch --problem {} --backend host --world-size {} --dtype f32 "
          "--size tiny --trials 1 --skip-timing --timeout 10 --json {}/redteam_lowp_inputs_{}.so",
          PKF_WORKER, p, w, PKF_CANDIDATES, p);
      const Verdict v = RunJudge(cmd, dir + "/judge_stderr");
      EXPECT_TRUE(v.parsed) << v.channel_error << "\n" << cmd << "\n" << v.stderr_text;
      if (v.parsed && v.result.status() != Result::WRONG_OUTPUT)
        accepted.push_back(
            fmt::format("{} w={} -> {}", p, w, Result::Status_Name(v.result.status())));
    }
  }
  EXPECT_TRUE(accepted.empty()) << "bf16 loads accepted on an f32 problem:\n  "
                                << fmt::format("{}", fmt::join(accepted, "\n  "));
}

// ---- round 10 (helper-redteam10): kernel work a frozen candidate scheduled ----------------------
// helper-notes/redteam-findings.md "ROUND 10". Row 25's interrupt storm again,
// armed through TCP pacing (sockets are allowed; only timerfd_create,
// timer_create, io_uring_setup and io_setup are refused): rank 0 keeps one
// loopback TCP connection with SO_MAX_PACING_RATE and, at the last call of
// each timed batch, queues ~200 one-skb sends (MSG_EOR, ~2.5 us each); each
// skb later departs from a per-socket hrtimer in softirq on the ranks' CPU
// (an interrupt + loopback tx/rx + ACK, ~20-35 us here) while the candidate
// is frozen and the reference is timed next (~75% of the time); its next
// call aborts the rest (RST). pkf_run is the naive reference. Seen OK 1.55 /
// 1.55 / 1.41 / 1.54 / 1.40 / 1.20x (one connection never aborted: 1.31-1.47x
// in 7 of 7, up to 1.88x) against control_naive 0.97-1.00x in the same
// minutes, nothing flagged. Bounded here by 1.2x control_naive's speedup in
// 3 launches (any conviction or a refused socket is fine). Since host
// candidate ranks may open no socket but AF_UNIX (containment.cc; also no
// setitimer/alarm): the storm is never armed, OK 1.00x.
TEST(RedTeam, tcp_pacing_storm) {
  const double honest = HonestSpeedup();
  for (int i = 0; i < 3; ++i)
    Expect("tcp_pacing_storm", {kCheatAny, kOk, kRuntime, Accept{Result::SETUP_ERROR, {}}}, "", 10,
           "", 1.2 * honest);
}

// Public check schedule: probes land only on j >= 5 and drips on j >= 3, and
// ~3-4 of the 6 long timed batches whose median is the official time lie in
// j < 5. probe_window_front fuses every batch no probe can land on (warm-up,
// j < 5, short; drip batches counted as they take a j too), padded to a
// 120 us span so that later probes do not land in its wake-up, front-loads
// probe-able ones (15% and 35% of the calls with one exchange each, then
// the honest epoch exchange) and is honest on drip batches. Seen OK 11.6 /
// 11.3 / 16.2x (probes consistent, drips consistent; batch_consistency and
// plausibility flags only) against control_flag_epoch 7.5-7.8x in the same
// minutes. Bounded here by 1.25x the honest epoch's speedup (same test).
TEST(RedTeamPending, probe_window_front) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 10 (OK 10-16x against an honest 7.5x); PKFORGE_REDTEAM_PENDING=1 runs it";
  Result r;
  Expect("control_flag_epoch", {kOk, Cheat({"batch_drip"})}, "", 10, "", 0, false, &r);
  const double honest = r.status() == Result::OK ? r.speedup() : 5.0;
  for (int i = 0; i < 2; ++i)
    Expect("probe_window_front", {kCheatAny, kOk}, "", 10, "", 1.25 * honest);
}

// Round 12 (helper-redteam12, 18269b0): a fixed number of probes (3 among
// batches 1..13 at --iters 6), each seen by the candidate afterwards (a
// SIGCONT mid-batch). probe_count_fuse is honest (one epoch a call) until it
// has seen 2 of them, then fuses long batches in chunks of 32 calls (short
// ones always, drips honest). Statistical: OK 11.4-14.3x in 4 of 28 launches
// (CHEAT 4 of 28, OK 5.9-9.2x otherwise) against control_flag_epoch
// 5.1-8.1x in the same minutes; so twelve launches here, each bounded by
// 1.5x the honest epoch's speedup (at least 9x).
TEST(RedTeamPending, probe_count_fuse) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 12 (OK 11-14x in 4 of 28 against an honest 5-8x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  Result r;
  Expect("control_flag_epoch", {kOk, Cheat({"batch_drip"})}, "", 10, "", 0, false, &r);
  const double honest = r.status() == Result::OK ? r.speedup() : 5.0;
  for (int i = 0; i < 12; ++i)
    Expect("probe_count_fuse", {kCheatAny, kOk}, "", 10, "", std::max(1.5 * honest, 9.0));
}
// The same seen without a signal handler (a call returning over 250 us after
// the previous one): OK 15.6-18.9x in 13 of 38 launches, never caught,
// against control_flag_epoch 5.6-8.3x alternated with it.
TEST(RedTeamPending, probe_gap_fuse) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 12 (OK 15-19x in 13 of 38 against an honest 5-8x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  Result r;
  Expect("control_flag_epoch", {kOk, Cheat({"batch_drip"})}, "", 10, "", 0, false, &r);
  const double honest = r.status() == Result::OK ? r.speedup() : 5.0;
  for (int i = 0; i < 8; ++i)
    Expect("probe_gap_fuse", {kCheatAny, kOk}, "", 10, "", std::max(1.5 * honest, 9.0));
}

// Every long batch fused in chunks of 32 calls, drips honest (the kOpDrip
// Cmd on the stack), shorts one exchange each, no counting at all: OK 57 of
// 76 at 4.5-21.4x (48 over 1.5x the honest epoch), CHEAT_DETECTED 19 of 76.
// The chunk residual of round 10 finding 1 (drip_aware_epoch_k8 OK 12 of 12
// at 13.6-18.1x in the same minutes); the schedule changes nothing for it.
TEST(RedTeamPending, r13_always_k32) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 13 (OK 57 of 76 at up to 21x against an honest 5-10x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R13ExpectUnderHonestEpoch("r13_always_k32", 4);
}
// Whole-batch fusion (one exchange a batch) on the ranks' main threads, its
// sums written straight into the calls' output slots in call order, the
// ranks taking turns every 8 calls: outputs appear at the pace of the work,
// so the probes (which count matching outputs, not returned calls) read
// "consistent"; drips honest. OK 34 of 40 at 10.3-18.4x against
// control_flag_epoch 6.4-8.4x (CHEAT_DETECTED batch_progress 6 of 40: a
// rank late to the exchange); beside a busy loop on the judge's CPU OK 3 of
// 8 at 7.5-10.3x.
TEST(RedTeamPending, r13_inorder_whole) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 13 (OK 34 of 40 at 10-18x against an honest 6-8x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R13ExpectUnderHonestEpoch("r13_inorder_whole", 4);
}
// Whole-batch fusion whose ranks never yield in a batch (peers waited for
// on futexes) and ask for a 100 ms slice (sched_setattr on pid 0): the
// judge, woken at the probe's pause point, cannot preempt them, so every
// stop is "late" and every probe inconclusive; batch_progress is then "not
// judged", a pass without a flag. Works only while the judge's other CPU is
// busy (the ranks share one CPU): beside `taskset -c 0 yes` OK 5 of 8 at
// 11.1-18.1x (honest 4.9-6.0x), in one uncontrolled window OK 6 of 10 at
// 12.2-24.1x; on a quiet host CHEAT_DETECTED batch_progress 12 of 12. So
// this test may pass when run alone; the next one gives the judge one CPU.
TEST(RedTeamPending, r13_late_stop_whole) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 13 (OK 5 of 8 at 11-18x beside a busy loop on the judge's CPU); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R13ExpectUnderHonestEpoch("r13_late_stop_whole", 8);
}
// The same with the judge confined to one CPU, as in a one-CPU lane or any
// allowed set of one (rank_pool.cc RankCpus then pins the ranks to the
// judge's own CPU): `taskset -c <first allowed CPU>` before the generic
// command. OK 24 of 28 at 9.4-26.7x against control_flag_epoch OK 28 of 28
// at 3.9-6.4x (10:18-10:19 UTC); without the slice request OK 6 of 8.
Result R13LaunchOnOneCpu(const std::string& name) {
  const std::string dir = NewDir(name);
  setenv("PKF_REDTEAM_DIR", dir.c_str(), 1);
  const std::string status = ReadFile("/proc/self/status");
  const size_t at = status.find("Cpus_allowed_list:");
  const int cpu = at == std::string::npos ? 0 : std::atoi(status.c_str() + at + 18);
  const std::string cmd = fmt::format(
      "timeout -k 5 70 taskset -c {} {} launch --problem allreduce --backend host --world-size 3 "
      "--dtype f32 --size tiny --trials 2 --warmup 1 --iters 6 --timeout 10 --json "
      "--candidate-writable {} {}/redteam_{}.so",
      cpu, PKF_WORKER, dir, PKF_CANDIDATES, name);
  const Verdict v = RunJudge(cmd, dir + "/judge_stderr");
  const std::vector<int> alive = StillAlive(dir);
  unsetenv("PKF_REDTEAM_DIR");
  std::printf("REDTEAM %s (one CPU) status=%s speedup=%.2f\n", name.c_str(),
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              v.parsed ? v.result.speedup() : 0.0);
  EXPECT_TRUE(alive.empty()) << name << ": processes left alive";
  EXPECT_TRUE(v.parsed) << v.channel_error << "\n" << cmd << "\n" << v.stderr_text;
  EXPECT_NE(v.result.status(), Result::HARNESS_ERROR) << cmd << "\n" << v.stderr_text;
  return v.result;
}
TEST(RedTeamPending, r13_late_stop_whole_one_cpu) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 13 (one CPU: OK 24 of 28 at 9-27x against an honest 4-6x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  const Result h = R13LaunchOnOneCpu("control_flag_epoch");
  EXPECT_EQ(h.status(), Result::OK) << h.message();
  const double honest = h.status() == Result::OK ? h.speedup() : 4.0;
  for (int i = 0; i < 4; ++i) {
    const Result r = R13LaunchOnOneCpu("r13_late_stop_whole");
    if (r.status() == Result::OK) {
      EXPECT_LT(r.speedup(), std::max(1.5 * honest, 7.5))
          << "r13_late_stop_whole forged a speedup: " << r.message();
    }
  }
}
// Adaptive fusion on a probe budget (each probe seen afterwards by a
// SIGCONT): fuse the next long batch only while one more anomalous probe
// would not convict, counting probed honest batches as consistent ones.
// Chunks of 32: OK 37 of 62, 5 of them over 1.5x the honest epoch (10.3-
// 16.2x), CHEAT_DETECTED 25 of 62; whole batches (r13_budget_dilute): OK 20
// of 62 at 5.4-9.0x, never over, CHEAT_DETECTED 42 of 62. Mixing fails on
// the span rule, not the dilution rule: after one fused sample the probes
// pause against a fused span and the honest batches read "behind" too.
TEST(RedTeamPending, r13_budget_k32) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 13 (OK over 1.5x the honest epoch in 5 of 62); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R13ExpectUnderHonestEpoch("r13_budget_k32", 12);
}
// Never over 1.5x the honest epoch, but convicted in only 42 of 62
// launches: pending (not a reliable conviction).
TEST(RedTeamPending, r13_budget_dilute) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 13 (CHEAT_DETECTED 42 of 62, OK 5.4-9.0x otherwise); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R13ExpectUnderHonestEpoch("r13_budget_dilute", 4);
}
// Whole-batch fusion on a helper thread while the main threads sleep, aimed
// at the probes' main_idle rule: it never fired (the window starts before
// the batch's command; wake-up, barrier and hand-off outweigh a fused span
// of ~250 us): CHEAT_DETECTED batch_progress 54 of 54, every probe "behind".
TEST(RedTeam, r13_idle_helper_whole) { ExpectProgressCheat("r13_idle_helper_whole"); }

// Round 14 (helper-redteam14, 2026-12-05): containment of the executor's
// sandbox, not the judge. A worker run gets its scratch folder (on the
// host's own filesystem) read-write as its working directory; nothing but
// RLIMIT_FSIZE (max_file_mb, per file) bounds what lands there, and the
// memory cgroup does not count disk blocks. r14_disk_fill's rank 0
// fallocates 16 files of min(RLIMIT_FSIZE, 64 MiB) in pkf_setup (blocks
// reserved without writing) and is otherwise correct. Run here as the
// executor runs a host evaluation (pkforge-sandbox, bubblewrap, the scratch
// owned by and run as uid 65534 when root, max_file_mb 64): OK and 1.1 GiB
// in the scratch (10:52 UTC); through a real pkforge-executor (defaults:
// max_file_mb 4096) three 1 GiB files took 4 ms and `du` of the evaluation's
// scratch read 3.1 GiB while it ran (10:46 UTC): with 18 such calls a
// candidate fills a 72 GiB host disk for the length of its evaluation.
// Expected once fixed: a per-evaluation disk quota (or no writable host
// folder at all: the worker needs only to read its artifact), so well under
// the 1 GiB asked for.
// Fixed: the executor runs candidate code with its folder read-only and the
// working directory in the sandbox's private tmpfs (Runtime::CandidatePolicy,
// SandboxPolicy::scratch_read_only; RuntimePolicyTest.
// CandidateRunsGetTheirFolderReadOnly pins the executor's choice), run here
// the same way (--scratch-read-only).
TEST(RedTeam, r14_disk_fill) {
  const std::string worker = PKF_WORKER;
  const std::string bin = worker.substr(0, worker.rfind('/'));
  const std::string scratch = NewDir("r14_disk_fill_scratch");
  const std::string logs = NewDir("r14_disk_fill");
  std::string run_as;
  if (geteuid() == 0) {
    // The executor's default as root (config.cc: run_as_uid 65534), its
    // scratch folder the run's own.
    ASSERT_EQ(chown(scratch.c_str(), 65534, 65534), 0);
    run_as = "--run-as-uid 65534 --run-as-gid 65534 ";
  }
  chmod(scratch.c_str(), 0700);
  const std::string cmd = fmt::format(
      "{}/pkforge-sandbox --scratch {} --scratch-read-only --max-file-mb 64 --timeout 120 {}--ro {} --ro {} "
      "--env PATH=/usr/bin:/bin -- {} launch --problem allreduce --backend host --world-size 3 "
      "--dtype f32 --size tiny --trials 2 --warmup 1 --iters 6 --timeout 10 --json "
      "{}/redteam_r14_disk_fill.so",
      bin, scratch, run_as, bin, PKF_CANDIDATES, worker, PKF_CANDIDATES);
  const Verdict v = RunJudge(cmd, logs + "/judge_stderr");
  int64_t bytes = 0;
  if (DIR* d = opendir(scratch.c_str())) {
    while (dirent* e = readdir(d)) {
      struct stat st{};
      const std::string path = scratch + "/" + e->d_name;
      if (e->d_name[0] != '.' && lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        bytes += static_cast<int64_t>(st.st_blocks) * 512;
        unlink(path.c_str());
      }
    }
    closedir(d);
  }
  rmdir(scratch.c_str());
  std::printf("REDTEAM r14_disk_fill status=%s scratch held %lld MiB\n",
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              static_cast<long long>(bytes >> 20));
  EXPECT_TRUE(v.parsed) << v.channel_error << "\n" << cmd << "\n" << v.stderr_text;
  EXPECT_NE(v.result.status(), Result::HARNESS_ERROR) << cmd << "\n" << v.stderr_text;
  EXPECT_LE(bytes, int64_t{256} << 20)
      << "a candidate took " << (bytes >> 20)
      << " MiB of the host's disk through its scratch folder: no per-evaluation disk quota\n"
      << cmd;
}

// Round 14: a judge that never returns. A candidate rank running as the
// judge's uid (the executor's sandbox runs judge and ranks as one uid; any
// launch by a plain user) opens a write end of its own command pipe
// (/proc/self/fd/3), forges its kOpSetup reply, fills the pipe (64 KiB) and
// sleeps: the judge freezes it and then blocks for good in RankPool::Send's
// write() of the next command into the full pipe of a stopped reader (no
// phase deadline covers a write). Measured 10:48-10:50 UTC: bare launch as
// uid 65534, --timeout 10: no result, killed by `timeout` after 45 s (no
// process left); through a real pkforge-executor (world 3, --timeout 5):
// TIMEOUT "exceeded the executor's deadline of 50 s" after 51 s, the slot
// held 10x the phase limit. As root the ranks drop to 65534 and cannot open
// the root-owned pipe: WRONG_OUTPUT (blocked), asserted below too.
// Launched by root (the battery's generic command) the ranks drop to uid
// 65534 and cannot open the root-owned pipe for writing (EACCES): the
// gated candidate writes nothing. WRONG_OUTPUT 2 of 2 (10:48 UTC).
TEST(RedTeam, r14_cmd_pipe_stall_as_root) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the ranks then run as another uid)";
  Expect("r14_cmd_pipe_stall", {kWrong});
}
// Fixed (RankPool::Send: the command channel is non-blocking, a full one is
// CHEAT_DETECTED result_channel): CHEAT after 0.1 s, was no verdict at 40 s.
TEST(RedTeam, r14_cmd_pipe_stall) {
  const std::string dir = NewDir("r14_cmd_pipe_stall_nobody");
  setenv("PKF_REDTEAM_DIR", dir.c_str(), 1);
  const std::string cmd = fmt::format(
      "timeout -k 5 40 {}{} launch --problem allreduce --backend host --world-size 3 --dtype f32 "
      "--size tiny --trials 2 --warmup 1 --iters 6 --timeout 5 --json --candidate-writable {} "
      "{}/redteam_r14_cmd_pipe_stall.so",
      geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "", PKF_WORKER,
      dir, PKF_CANDIDATES);
  const Verdict v = RunJudge(cmd, dir + "/judge_stderr");
  const std::vector<int> alive = StillAlive(dir);
  unsetenv("PKF_REDTEAM_DIR");
  std::printf("REDTEAM r14_cmd_pipe_stall (one uid) status=%s after %.1f s\n",
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT", v.seconds);
  EXPECT_TRUE(alive.empty()) << "processes left alive";
  ASSERT_TRUE(v.parsed) << "the judge gave no verdict within 40 s (phase timeout 5 s): "
                        << v.channel_error << "\n" << cmd << "\ncandidate log:\n"
                        << ReadFile(dir + "/log");
  EXPECT_TRUE(v.result.status() == Result::TIMEOUT ||
              (v.result.status() == Result::CHEAT_DETECTED &&
               FailingChecks(v.result).count("result_channel") > 0))
      << v.result.message();
}

// Round 14: the verdict a person reads. `pkforge eval` (table output,
// cli/eval.cc Report) prints the result's message, failures and stderr tails
// byte for byte; r14_ansi_forge (self-contained source, submitted as is)
// prints terminal control sequences on stderr: clear the screen, draw a
// made-up "OK ... speedup 41.724x" report, conceal what follows (SGR 8),
// and fails its first call. Through a real pkforge-executor (host, world 3,
// 10:54 UTC): RUNTIME_ERROR, and the CLI's stdout held the raw ESC bytes
// (`cat -v`: ^[[2J^[[HOK: 2 trials correct; ... ^[[8m), so a terminal shows
// only the forged OK. The HTML report escapes them (cli/report.cc
// HtmlEscape); the JSON output escapes them too.
// Fixed (common/utf8.h TerminalSafe in cli/eval.cc Report and the judge's
// ResultToText): 792 bytes printed, no ESC (the test EvalTest.
// TerminalEscapesFromACandidateArePrintedAsText pins the report itself).
TEST(RedTeam, r14_ansi_forge) {
  const ExecutorEval e = EvalThroughExecutor("r14_ansi_forge", "");
  if (!e.skipped.empty()) GTEST_SKIP() << e.skipped;
  ASSERT_TRUE(e.started) << "the executor did not start:\n" << e.executor_stderr;
  const testing::Captured& c = e.eval;
  std::printf("REDTEAM r14_ansi_forge pkforge eval printed %zu bytes, %zu ESC\n", c.output.size(),
              static_cast<size_t>(std::count(c.output.begin(), c.output.end(), '\x1b')));
  EXPECT_NE(c.output.find("RUNTIME_ERROR"), std::string::npos) << c.output;
  EXPECT_EQ(c.output.find('\x1b'), std::string::npos)
      << "a candidate's terminal control sequences reach the operator's terminal raw:\n"
      << c.output;
}

// Round 15 (helper-redteam15, 2026-12-05, against f5230d8): the probes'
// "main thread" is the thread-group leader (judge_internal.h
// CandidateWindow::MainThreadsCpuNs reads ThreadCpuNs(pid, pid)). pkf_setup
// saves the harness's context (swapcontext), parks the leader on a private
// stack in a futex wait with every signal blocked, and a thread it created
// (baseline, allowed) resumes that context on the leader's stack: it returns
// from pkf_setup and runs the harness's command loop, every pkf_run
// included, for the rest of the evaluation. The leader's CPU time stays 0,
// so every probe is main_idle (inconclusive); with none late or starved
// batch_progress says "not judged" and passes without a flag. The calls
// fuse whole batches, drips honest. r15_parked_leader_sleep (futex-sleeping
// exchange, so no stop comes late): OK 11.4-13.0x, batch_progress passed
// "not judged" in every launch (only batch_consistency flags: 75th
// percentile); r15_parked_leader_fuse (spinning exchange): OK 8.4-12.3x,
// late stops flag it. control_flag_epoch OK 4.8-5.8x in the same minutes.
// Fixed (progress_probe.h kIdleExcuseLimit: a candidate over 1.5x faster
// than the reference is judged on what its probes found): sleep CHEAT 15 of
// 16 launches (the other OK 7.1x, within the honest band), fuse 16 of 16
// (13:15-13:20 UTC).
TEST(RedTeam, r15_parked_leader_sleep) {
  R13ExpectUnderHonestEpoch("r15_parked_leader_sleep", 4);
}
// _fuse after the fixes: CHEAT_DETECTED 9 of 10 (14:20 UTC); the other OK
// 13.2x, flagged (2 of 4 conclusive probes behind when the schedule's cap
// was reached): the chunk/fusion residual's rate, so behind the pending flag
// (4 launches would fail a third of CI runs).
TEST(RedTeamPending, r15_parked_leader_fuse) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 15 (CHEAT 9 of 10 after the fix, one OK 13.2x flagged); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R13ExpectUnderHonestEpoch("r15_parked_leader_fuse", 4);
}

// Round 15: row 25's interrupt storm through disk write-back, which no
// seccomp rule can refuse (write, sync_file_range). r15_writeback_storm's
// rank 0 dirties every other page of a 2 MiB region of an unnamed /tmp file
// at the last call of each timed batch and starts their write-back
// (SYNC_FILE_RANGE_WRITE, no wait): the completions interrupt CPU 1 (the
// ranks' CPU; every virtio-blk interrupt lands there on this VM) while the
// candidate is frozen. pkf_run is the naive reference. OK 0.54x (256 pages),
// 0.92-0.95x (16-48 pages), 0.85x (16 pages, every rank) against
// control_naive 0.98-0.99x: submitting costs the candidate what the
// completions cost the reference; the judge holds. Bounded by 1.2x
// control_naive's speedup.
TEST(RedTeam, r15_writeback_storm) {
  const double honest = HonestSpeedup();
  for (int i = 0; i < 2; ++i)
    Expect("r15_writeback_storm", {kCheatAny, kOk, kRuntime, Accept{Result::SETUP_ERROR, {}}}, "",
           10, "", 1.2 * honest);
}
// The parked leader alone, on control_flag_epoch's honest calls: OK
// 5.2-6.5x (control_flag_epoch 5.2-6.2x in the same minutes), and every
// probe main_idle, "not judged", a silent pass: the trick switches
// batch_progress off for any candidate. A fixed judge must still judge its
// probes (at least one conclusive) or flag the check; it must not convict
// it (honest calls).
// Fixed: OK 4.8-5.6x in 8 of 8, its probes judged.
TEST(RedTeam, r15_parked_leader_honest) {
  for (int i = 0; i < 2; ++i) {
    Result r;
    Expect("r15_parked_leader_honest", {kOk}, "", 10, "", 0, false, &r);
    for (const auto& c : r.cheat_checks()) {
      if (c.check() != "batch_progress") continue;
      EXPECT_FALSE(c.passed() && c.detail().find("not judged") != std::string::npos)
          << "batch_progress passed without judging a single probe: " << c.detail();
    }
  }
}
// The parked leader fusing in chunks of 32 calls (a long batch then costs
// per call about what a short one does, so batch_consistency stays quiet):
// OK 9.9x with no flag at all once, 9.7x, 6.2-7.7x under another session's
// load (late stops flag it there), against control_flag_epoch 4.6-5.1x.
// With the idle excuse gone for fast candidates it is r13_always_k32, the
// stated chunk residual: OK 7.7-11.0x in 3 of 4 (13:15 UTC, one over the
// 1.5x-honest bound), the probes behind on 2 of 4 conclusive ones.
TEST(RedTeamPending, r15_parked_leader_k32) {
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 15 (OK 6-10x, once without any flag, against an honest 5x); "
                    "PKFORGE_REDTEAM_PENDING=1 runs it";
  R13ExpectUnderHonestEpoch("r15_parked_leader_k32", 4);
}

// Round 15: what a candidate leaves behind for later evaluations. A bare
// launch by a plain user (here: uid 65534 via setpriv on throwaway copies of
// the worker and the candidates, in a folder that uid owns, as a battery run
// by a non-root user has them) gives the candidate ranks that uid, and
// their Landlock ruleset (containment.cc ForbidProcWrites) handles only
// WRITE_FILE, allowed everywhere but /proc: making, renaming and removing
// files are not handled. r15_judge_binary_write (gated) creates, renames and
// removes a probe file next to /proc/self/exe (the worker) and next to its
// own library; with replace.ok it renames a script over the worker copy
// that prints a forged OK. Measured 12:48-12:51 UTC: OK (the probe worked in both
// folders on every rank), and the next launch of all_zeros with the same
// worker path printed {"status":"OK", ..., "speedup":99}. Expected once
// fixed: WRONG_OUTPUT (no file may be made or renamed there), and all_zeros
// judged WRONG_OUTPUT by the real worker.
// Fixed (containment.cc ConfineWrites: every Landlock write right handled,
// allowed only beneath --candidate-writable folders): WRONG_OUTPUT, and the
// next launch is judged by the real worker (WRONG_OUTPUT for all_zeros).
TEST(RedTeam, r15_judge_binary_write) {
  const std::string root = NewDir("r15_judge_binary_write_tree");
  const std::string log = NewDir("r15_judge_binary_write");
  ASSERT_EQ(std::system(fmt::format("mkdir -p {0}/bin {0}/cand && cp {1} {0}/bin/ && cp "
                                    "{2}/redteam_r15_judge_binary_write.so "
                                    "{2}/redteam_all_zeros.so {0}/cand/",
                                    root, PKF_WORKER, PKF_CANDIDATES)
                            .c_str()),
            0);
  std::string as = "";
  if (geteuid() == 0) {
    ASSERT_EQ(std::system(fmt::format("chown -R 65534:65534 {}", root).c_str()), 0);
    as = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  }
  { std::ofstream(log + "/replace.ok") << "the worker under " << root << " is a throwaway copy\n"; }
  setenv("PKF_REDTEAM_DIR", log.c_str(), 1);
  auto launch = [&](const std::string& cand) {
    return RunJudge(fmt::format("cd {0} && timeout -k 5 60 {1}{0}/bin/pkforge-worker launch "
                                "--problem allreduce --backend host --world-size 3 --dtype f32 "
                                "--size tiny --trials 2 --warmup 1 --iters 6 --timeout 10 --json "
                                "{0}/cand/redteam_{2}.so",
                                root, as, cand),
                    log + "/judge_stderr");
  };
  const Verdict attack = launch("r15_judge_binary_write");
  const Verdict after = launch("all_zeros");
  unsetenv("PKF_REDTEAM_DIR");
  std::printf("REDTEAM r15_judge_binary_write status=%s; all_zeros after it: %s\n",
              attack.parsed ? Result::Status_Name(attack.result.status()).c_str() : "NO_RESULT",
              after.raw.substr(0, 200).c_str());
  std::system(fmt::format("rm -rf {}", root).c_str());
  ASSERT_TRUE(attack.parsed) << attack.channel_error;
  EXPECT_EQ(attack.result.status(), Result::WRONG_OUTPUT)
      << "the candidate could create and rename files next to the judge's binary and its own "
         "library:\n"
      << ReadFile(log + "/log");
  ASSERT_TRUE(after.parsed) << after.channel_error;
  EXPECT_EQ(after.result.status(), Result::WRONG_OUTPUT)
      << "the next evaluation ran a judge the candidate left behind: " << after.raw;
}

// Round 15, the executor path: r15_parked_leader_exec (the parked leader on
// honest calls, self-contained) submitted as source to a real
// pkforge-executor (host, world 3, f32, tiny: compiled at -O3, run in the
// bubblewrap sandbox as one uid on its CPU lane) and judged with `pkforge
// eval --json`. 12:52-12:54 UTC: OK in 7 of 7 (4.9x and 5.1x by hand),
// batch_progress "(no probe was conclusive: not judged)", passed, in 6 of 7
// (6-11 probes, all main_idle; the other one's detail was not captured), as
// in a bare launch.
// Fixed: batch_progress judged (13:15 UTC: 15 probes, 2 behind, flagged).
TEST(RedTeam, r15_parked_leader_exec) {
  const ExecutorEval e = EvalThroughExecutor("r15_parked_leader_exec", "--json");
  if (!e.skipped.empty()) GTEST_SKIP() << e.skipped;
  ASSERT_TRUE(e.started) << "the executor did not start:\n" << e.executor_stderr;
  const testing::Captured& c = e.eval;
  const bool ok = c.output.find("\"status\":\"OK\"") != std::string::npos ||
                  c.output.find("\"status\": \"OK\"") != std::string::npos;
  const bool silent = c.output.find("(no probe was conclusive: not judged)") != std::string::npos;
  const size_t bp = c.output.find("\"batch_progress\"");
  std::printf("REDTEAM r15_parked_leader_exec (executor) OK=%d batch_progress not judged, passed=%d: %s\n",
              ok, silent,
              bp == std::string::npos
                  ? "(no batch_progress)"
                  : c.output.substr(c.output.find("detail", bp), 900).c_str());
  EXPECT_TRUE(ok) << c.output.substr(0, 2000);
  EXPECT_FALSE(silent) << "batch_progress passed without judging a single probe (executor path)";
}


}  // namespace
}  // namespace pkforge::kernels
