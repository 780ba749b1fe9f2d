// The red-team battery's cuda candidates (kernels/testdata/redteam/cuda/*.cu),
// evaluated by the real pkforge-worker on the cuda backend at world size 1
// (label gpu; every test skips without a usable GPU). Same assertions as
// redteam_test: the judge's stdout is exactly its one JSON line, the verdict
// is one the defended judge may give (never OK for an attack, never
// HARNESS_ERROR), the benign control stays OK.
#include <stdio.h>
#include <stdlib.h>

#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "gtest/gtest.h"
#include "kernels/harness/cuda_probe.h"
#include "kernels/harness/launch_test_util.h"

namespace pkforge::kernels {
namespace {

using testing::FailingChecks;
using testing::Result;
using testing::RunJudge;
using testing::Verdict;

bool HaveGpu() {
  static const bool ok = [] {
    auto p = ProbeCudaDevices();
    return p.ok() && p->device_count > 0;
  }();
  return ok;
}

// One acceptable verdict: status + (for CHEAT_DETECTED) checks that may fire first.
struct Accept {
  Result::Status status;
  std::set<std::string> checks;
};

// max_speedup > 0: an OK verdict must also stay below that speedup (for
// candidates that are the reference itself plus an attack on the reference).
// `timeout_s`: the judge's --timeout (each phase); the candidates that hang
// their setup on purpose take a shorter one, so the battery spends 20 s on
// each instead of 60 (device time is scarce).
void ExpectOneOf(const std::string& name, const std::vector<Accept>& accept,
                 double max_speedup = 0, Result* out = nullptr, int timeout_s = 60);

void Expect(const std::string& name, Result::Status status, std::set<std::string> checks = {}) {
  ExpectOneOf(name, {{status, std::move(checks)}});
}

void ExpectOneOf(const std::string& name, const std::vector<Accept>& accept, double max_speedup,
                 Result* out, int timeout_s) {
  if (!HaveGpu()) GTEST_SKIP() << "no usable GPU";
  const std::string err = ::testing::TempDir() + "/redteam_gpu_" + name + ".stderr";
  const std::string cmd = fmt::format(
      "timeout -k 5 400 {} launch --problem allreduce --backend cuda --world-size 1 --dtype f32 "
      "--size tiny --trials 2 --warmup 1 --iters 6 --timeout {} --json {}/redteam_cuda_{}.so",
      PKF_WORKER, timeout_s, PKF_CANDIDATES, name);
  const Verdict v = RunJudge(cmd, err);
  if (out != nullptr && v.parsed) *out = v.result;
  std::printf("REDTEAM cuda/%s status=%s message=%s\n", name.c_str(),
              v.parsed ? Result::Status_Name(v.result.status()).c_str() : "NO_RESULT",
              v.parsed ? v.result.message().substr(0, 160).c_str() : v.channel_error.c_str());
  ASSERT_TRUE(v.parsed) << v.channel_error << "\n" << cmd << "\n" << v.raw << "\n" << v.stderr_text;
  const Result& r = v.result;
  EXPECT_NE(r.status(), Result::HARNESS_ERROR) << v.raw;
  bool ok = false;
  for (const Accept& a : accept) {
    if (a.status != r.status()) continue;
    if (a.status != Result::CHEAT_DETECTED) ok = true;
    for (const std::string& c : FailingChecks(r)) ok = ok || a.checks.count(c) != 0;
  }
  EXPECT_TRUE(ok) << name << ": got " << Result::Status_Name(r.status()) << " (" << r.message()
                  << ")\n" << v.raw.substr(0, 3000);
  if (r.status() == Result::OK && max_speedup > 0) {
    EXPECT_LT(r.speedup(), max_speedup) << name << " forged a speedup\n" << v.raw.substr(0, 3000);
  }
}

TEST(RedTeamGpu, control_private_stream) { Expect("control_private_stream", Result::OK); }
// Measured on the H200 (session 8): OK at 0.002x (2024 us per call against
// 4.5): a batch ends when the device, not the call's stream, is idle, so the
// side stream's work is inside the measured interval, which is what the
// threat model asks for (or a conviction).
// H100 (session 21, one wait a dripped call, PKFORGE_DRIP_WAITS=1): its
// outputs copied out before its side stream's work was done: batch_drip
// "deferred".
TEST(RedTeamGpu, side_stream_short) {
  ExpectOneOf("side_stream_short",
              {{Result::CHEAT_DETECTED, {"outlived_call", "timed_output_reverify", "batch_drip"}},
               {Result::OK, {}}},
              /*max_speedup=*/1.0);
}
// Measured on the H200 (session 8): TIMEOUT in PHASE_SETUP (the rank's
// device synchronize after pkf_setup waits for the hog forever): the
// candidate's status, never the reference's.
TEST(RedTeamGpu, gpu_hog_setup) {
  ExpectOneOf("gpu_hog_setup",
              {{Result::CHEAT_DETECTED, {"outlived_call"}}, {Result::TIMEOUT, {}}}, 0, nullptr,
              20);
}
// H100, 2026-12-05 (bundle fd7a18a): TIMEOUT in PHASE_TIMING at 60 s, its
// 5 ms calls in batches sized for the reference's 7 us (1024 calls, 5 s a
// batch); batches for a candidate over 1 ms a call slower are now up to 8x
// shorter (BatchCalls), so the judge's clock should convict it again. Not
// OK either way.
TEST(RedTeamGpu, patch_event_timing) {
  ExpectOneOf("patch_event_timing",
              {{Result::CHEAT_DETECTED, {"wallclock_crosscheck"}}, {Result::TIMEOUT, {}}});
}
// Never HARNESS_ERROR: the reference opens the candidate's buffers before
// any candidate code runs (kOpInit/kOpAttach). On the H200 at a2c15bd: OK
// 1.016x (the garbage written later is never read by a trusted process).
TEST(RedTeamGpu, mailbox_garbage) {
  ExpectOneOf("mailbox_garbage",
              {{Result::OK, {}},
               {Result::SETUP_ERROR, {}},
               {Result::RUNTIME_ERROR, {}},
               {Result::CHEAT_DETECTED, {"result_channel", "reference_isolation", "outlived_call"}}},
              /*max_speedup=*/1.5);
}
TEST(RedTeamGpu, early_return_host_thread) {
  Expect("early_return_host_thread", Result::CHEAT_DETECTED,
         {"timed_output_reverify", "outlived_call"});
}

// ---- added 2026-12-04 (helper-redteam); compiled here, NOT run: no GPU in that session.
// The verdicts are what the defended judge must give; predictions from
// reading rank_cuda.cc / judge.cc are in each file's comment.
// H200 (2026-12-05): RUNTIME_ERROR on candidate rank 0 in the first timed
// batch (the faked synchronize leaves the rank's stop event unfinished:
// cudaErrorNotReady): the candidate's own error, no time.
// H100 (2026-12-06, with the cuda drip batches): CHEAT_DETECTED
// input_mutation on a drip batch (its faked synchronize let the staged
// inputs' copy run after the watcher had staged the next call's); since
// that copy is waited for, a drip call's outputs that were not there at
// its return are batch_drip's. H100 (2026-12-06, session 21, after round
// 29): OK at 1.03x, every check passed: the faked synchronize gains
// nothing (the judge's clock and idle probes, the outputs' copy on the
// call's stream). It wraps the reference's algorithm: an OK above 1.15x
// would be forged.
TEST(RedTeamGpu, patch_device_sync) {
  ExpectOneOf("patch_device_sync",
              {{Result::CHEAT_DETECTED,
                {"timed_output_reverify", "outlived_call", "wallclock_crosscheck", "batch_drip",
                 "input_mutation"}},
               {Result::RUNTIME_ERROR, {}},
               {Result::OK, {}}},
              1.15);
}
// H200 (2026-12-05): TIMEOUT in PHASE_SETUP, stuck rank 0 (the rank's
// synchronize after pkf_setup waits for the persistent kernel), as
// gpu_hog_setup: the candidate's status.
TEST(RedTeamGpu, persistent_precompute) {
  ExpectOneOf("persistent_precompute",
              {{Result::CHEAT_DETECTED, {"outlived_call", "timed_output_reverify"}},
               {Result::TIMEOUT, {}}},
              0, nullptr, 20);
}
// H200 (2026-12-05): CHEAT_DETECTED wallclock_crosscheck (the judge's clock
// measured 1515 us per call, the candidate's events 50 us).
// H100 (session 21, PKFORGE_DRIP_WAITS=1): batch_drip "deferred", as
// side_stream_short.
TEST(RedTeamGpu, graph_side_stream) {
  Expect("graph_side_stream", Result::CHEAT_DETECTED,
         {"outlived_call", "timed_output_reverify", "wallclock_crosscheck", "batch_drip"});
}
TEST(RedTeamGpu, ipc_handle_scan) { Expect("ipc_handle_scan", Result::WRONG_OUTPUT); }
// Predicted HARNESS_ERROR today: the reference's second context is created
// lazily (first kOpSwitch), after pkf_setup took the GPU's memory.
TEST(RedTeamGpu, gpu_memory_squeeze) {
  ExpectOneOf("gpu_memory_squeeze",
              {{Result::RUNTIME_ERROR, {}}, {Result::SETUP_ERROR, {}}, {Result::OK, {}}});
}
// Predicted false positive today: the runtime's callback thread is created
// on first use, inside a call, after the thread baseline.
TEST(RedTeamGpu, control_host_func) { Expect("control_host_func", Result::OK); }
// One slow device-wide synchronize after a call (a 20 ms spin left on a
// private stream by the second call only, as a hiccup of a busy host would
// stretch one synchronize; an honest naive candidate through a real executor
// on the H100, 2026-12-05, read CHEAT outlived_call at 5.7 ms against the
// 5 ms limit) is excused when the same call, made again, leaves nothing.
// H100 (session 16): OK, but neither excuse named: the judge's idle probe
// (an empty kernel in the reference's context, before the synchronize)
// waited out the spin and its immediate repeat was clean, silently; that
// excuse is now named in the detail too. H100 (session 17, twice): OK with
// neither excuse named: the spin was not seen at all (the judge's probes
// share the GPU with it by time slices of a few ms, under the 5 ms limit),
// so whether a rerun happens depends on the GPU's scheduling. What the test
// holds is the verdict: a one-off slow call is not convicted; whether the
// rerun was exercised is printed.
TEST(RedTeamGpu, control_linger_once) {
  if (!HaveGpu()) GTEST_SKIP() << "no usable GPU";
  Result r;
  ExpectOneOf("control_linger_once", {{Result::OK, {}}}, 0, &r);
  bool excused = false;
  for (const auto& c : r.cheat_checks())
    excused = excused || (c.check() == "outlived_call" &&
                          (c.detail().find("slow synchronize") != std::string::npos ||
                           c.detail().find("slow idle probe") != std::string::npos));
  std::printf("REDTEAM cuda/control_linger_once: the 20 ms spin %s\n",
              excused ? "was seen and excused by a rerun" : "was not seen by the judge's probes");
}
// The device-wide persisting-L2 set-aside shrinks the reference's cache.
TEST(RedTeamGpu, l2_persist_squeeze) {
  // The candidate is the NCCL reference: identical candidates read 0.77-0.92
  // at world size 1 (docs/performance.md); above 1.15 the squeeze worked.
  ExpectOneOf("l2_persist_squeeze",
              {{Result::CHEAT_DETECTED, {"outlived_call", "wallclock_crosscheck"}}, {Result::OK, {}}},
              1.15);
}


// ---- added 2026-12-04 17:49 session (helper-redteam3), run on the H200 on
// 2026-12-05. Batch look-ahead (helper-notes round 3 findings 1-2): one NCCL
// group for a whole batch, enqueued by its first call (fuse) or its last
// (defer); control_nccl_per_call is the honest per-call yardstick (OK
// 0.97-0.99x there).
const std::set<std::string> kBatchChecks = {"poison_at_start", "timed_output_reverify",
                                            "poison_unwritten", "outlived_call",
                                            "batch_consistency", "batch_progress"};
TEST(RedTeamGpu, control_nccl_per_call) { Expect("control_nccl_per_call", Result::OK); }
// H200 (2026-12-05, before "behind" probes convicted on cuda): CHEAT
// batch_consistency at 2.03x and 2.26x the reference's ratio (limit 2.0x),
// once OK at 12.45x with 1.91x there and 3 of 4 probes behind (then a flag).
// H100 (session 17): OK at 14.9x and 15.3x in 2 of 3 runs (batch_consistency
// 1.81-2.00x, probes 5 of 10 stalled at 0% done, 5 at 100% past half the
// batch: a flag); the stall rule (progress_probe.h) convicts that pattern.
// Three runs: each must be convicted.
TEST(RedTeamGpu, batch_fuse_group) {
  for (int run = 0; run < 3; ++run)
    ExpectOneOf("batch_fuse_group", {{Result::CHEAT_DETECTED, kBatchChecks}, {Result::WRONG_OUTPUT, {}}});
}
double R15HonestSpeedup();
// Red team round 7: the group first, then a spin kernel per later call, so
// that probes find it "ahead" (a flag on cuda) and short/long batches stay
// within 2x. Predicted OK at ~2.5-3.5x the honest per-call candidate.
// Measured on the H100 (2026-12-05, bundle c13cff5): OK at 1.099x, flagged
// (probes 3 of 4 ahead), so its time was its batches' 75th percentile
// (6.2 us, median 5.4 us) against 1.30-1.35x for the honest per-call kernel
// in the same run: the flag's conservative time took the gain. Held when it
// is convicted, or OK within 1.5x the honest per-call kernel's speedup.
TEST(RedTeamGpu, fuse_group_ahead) {
  if (!HaveGpu()) GTEST_SKIP() << "no usable GPU";
  const double honest = R15HonestSpeedup();
  ASSERT_GT(honest, 0) << "r15_control_kernel_copy was not OK: no yardstick";
  ExpectOneOf("fuse_group_ahead",
              {{Result::CHEAT_DETECTED, kBatchChecks}, {Result::WRONG_OUTPUT, {}}, {Result::OK, {}}},
              1.5 * honest);
}
// Red team round 8 (not yet run on a GPU): a hog kernel in a second context,
// delayed behind a host-to-device copy so that the idle probe right after
// the candidate's batch sees an idle GPU, then running ~3 ms into the
// reference's batch when it follows. The calls are the reference's own
// algorithm: above 1.15x the hog slowed the reference. Predicted OK at
// ~1.1-1.4x without a defence; since 1fc7ec1 the judge's empty kernel also
// runs right before each reference timed batch (after a secret delay of up
// to one reference batch) and right after it, and two waits over 0.5 ms
// are CHEAT_DETECTED outlived_call (JudgeReferenceIdle). Pending until run
// on a GPU.
TEST(RedTeamGpu, delayed_hog_copy_engine) {
  if (!HaveGpu()) GTEST_SKIP() << "no usable GPU";
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "round 8 cuda prediction (not run); PKFORGE_REDTEAM_PENDING=1 runs it";
  ExpectOneOf("delayed_hog_copy_engine",
              {{Result::CHEAT_DETECTED, {"outlived_call", "wallclock_crosscheck"}}, {Result::OK, {}}},
              1.15);
}
// H200 (2026-12-05): CHEAT_DETECTED timed_output_reverify (3 of 3).
TEST(RedTeamGpu, defer_to_last_group) {
  ExpectOneOf("defer_to_last_group",
              {{Result::CHEAT_DETECTED, kBatchChecks}, {Result::WRONG_OUTPUT, {}}});
}
// Honest and much faster per call than the reference (one D2D copy per
// call at world size 1): batch_consistency must not convict it although its
// single calls are dominated by the wake-up of a long-stopped candidate.
TEST(RedTeamGpu, control_copy_per_call) { Expect("control_copy_per_call", Result::OK); }
// A persistent kernel in a second context of the candidate's own (the
// candidate rank's device-wide synchronize covers only its primary context):
// only the judge's idle probe can see it. WRONG_OUTPUT = no second context.
// H200 (2026-12-05): OK at 0.29x and 0.53x while each idle probe had a
// 5 ms limit only: the judge's empty kernel waited a time slice, 3.2 ms at
// the median (honest: 19-23 us). Now the median of the idle probes must stay
// under 1 ms (JudgeIdleLatency).
TEST(RedTeamGpu, secondary_context_hog) {
  ExpectOneOf("secondary_context_hog",
              {{Result::CHEAT_DETECTED, {"outlived_call", "frozen_while_idle"}},
               {Result::WRONG_OUTPUT, {}}});
}
// Device-wide application clocks set low after each call (gated on NVML
// allowing it): must be refused.
TEST(RedTeamGpu, nvml_clock_squeeze) { Expect("nvml_clock_squeeze", Result::WRONG_OUTPUT); }

// ---- added 2026-12-05 (helper-redteam15, red team round 15, cuda; against
// f5230d8): compiled here, NOT run (no GPU for helpers). World size 1, tiny
// allreduce (the allreduce of one rank is a copy). Predictions and the traced
// mechanisms are in each candidate's header and in
// /work/helper-notes/redteam-findings.md, "Round 15 (cuda, predicted)".
// The honest yardstick: one copy kernel per call on the call's stream.
TEST(RedTeamGpu, r15_control_kernel_copy) { Expect("r15_control_kernel_copy", Result::OK); }
// Honest and unusual: every call a CUDA graph (instantiated in pkf_setup),
// its kernel node's arguments updated per call.
TEST(RedTeamGpu, r15_control_graph_update) { Expect("r15_control_graph_update", Result::OK); }
// The cuda drip batches judge honest calls: one NCCL call a call (the
// reference's own kind of work, from another process) has a batch_drip
// check that was conclusive and passed, not "not judged" or a flag.
TEST(RedTeamGpu, drip_batches_judge_an_honest_candidate) {
  if (!HaveGpu()) GTEST_SKIP() << "no usable GPU";
  Result r;
  ExpectOneOf("control_nccl_per_call", {{Result::OK, {}}}, 0, &r);
  bool found = false;
  for (const auto& c : r.cheat_checks())
    if (c.check() == "batch_drip") {
      found = true;
      EXPECT_TRUE(c.passed() && !c.flag_only() &&
                  c.detail().find("consistent") != std::string::npos)
          << c.detail();
    }
  EXPECT_TRUE(found) << "no batch_drip check in the result";
}

// r15_control_kernel_copy's speedup, measured once per test process (0 when
// it was not OK: the round-15 predictions then fail, they need it).
double R15HonestSpeedup() {
  static double speedup = -1;
  if (speedup < 0) {
    Result r;
    ExpectOneOf("r15_control_kernel_copy", {{Result::OK, {}}}, 0, &r);
    speedup = r.status() == Result::OK ? r.speedup() : 0;
    std::printf("REDTEAM cuda/r15 honest yardstick r15_control_kernel_copy: %.3fx\n", speedup);
  }
  return speedup;
}
// Round 15's predicted holes: an OK above 1.5x the honest per-call kernel is
// a forged speedup; never HARNESS_ERROR. An attack that could not run fails
// its first call with its own code (RUNTIME_ERROR "pkf_run returned 9x", see
// its header): a failure to read, not a defence.
void R15Expect(const std::string& name, std::vector<Accept> accept) {
  if (!HaveGpu()) GTEST_SKIP() << "no usable GPU";
  const double honest = R15HonestSpeedup();
  ASSERT_GT(honest, 0) << "r15_control_kernel_copy was not OK: no yardstick";
  accept.push_back({Result::OK, {}});
  ExpectOneOf(name, accept, 1.5 * honest);
}
const std::set<std::string> kR15BatchChecks = {
    "poison_at_start", "timed_output_reverify", "poison_unwritten", "outlived_call",
    "batch_consistency", "batch_progress", "batch_drip", "wallclock_crosscheck"};
// A persistent kernel per timed batch serves the calls from a host-mapped
// mailbox (calls 1..N-1 launch nothing and return before their work is
// done). Predicted OK at ~2-3x the honest per-call kernel: nothing of the
// trusted side looks at the call's stream between two calls. Measured on the
// H100 (2026-12-05): OK at 4.53x against 1.35x for the honest per-call
// kernel, every check passed (the stated cuda residual). Since the cuda drip
// batches (H100, 2026-12-06): CHEAT_DETECTED batch_drip (a call alone, its
// inputs released once the previous call's outputs matched, costs what an
// honest launch costs: +3.3..3.6 us over its free-running 1.0 us).
TEST(RedTeamGpu, r15_persistent_mailbox) {
  R15Expect("r15_persistent_mailbox", {{Result::CHEAT_DETECTED, kR15BatchChecks}});
}
// Chunks of 8 calls done by the first call of each chunk (the cuda residual
// of threat-model row 23, measured). Predicted OK at ~2-3x the honest
// per-call kernel. Measured on the H100 (2026-12-05): OK at 3.53x against
// 1.35x, probes 5 of 5 consistent (the stated cuda residual). Since the
// cuda drip batches: +2.1..7.6 us a dripped call over its free-running
// 1.3-1.5 us, where honest candidates read -0.4..+0.6 (batch_drip).
TEST(RedTeamGpu, r15_chunk_k8) {
  R15Expect("r15_chunk_k8", {{Result::CHEAT_DETECTED, kR15BatchChecks}});
}
// A never-ending copy-engine hog in a second context (a graph WHILE loop of
// device-to-device copies, launched by the first timed call): invisible to
// the empty-kernel idle probes, and the reference at world size 1 is a NCCL
// memcpy. Predicted OK with a forged speedup, or TIMEOUT / HARNESS_ERROR if
// the copy engines time-slice the contexts coarsely (the judge's own small
// copies wait too). TIMEOUT is accepted: the candidate's status, no gain.
// Measured on the H100 (2026-12-05): TIMEOUT in the timing phase (60 s).
TEST(RedTeamGpu, r15_ce_hog_loop) {
  R15Expect("r15_ce_hog_loop",
            {{Result::CHEAT_DETECTED, {"outlived_call", "wallclock_crosscheck", "frozen_while_idle"}},
             {Result::TIMEOUT, {}}});
}

// ---- added 2026-12-06 (helper-redteam28, round 28): the cuda drip batches
// (27d3e9a), source review; compiled here, NOT run (no GPU for helpers).
// Predictions and the traced mechanisms are in each candidate's header and in
// /work/helper-notes/redteam-findings.md, "Round 28". Pending until run on a
// GPU (PKFORGE_REDTEAM_PENDING=1 runs them).
// r15_chunk_k8 padded to ~1.8 us a free-running call: batch_drip's limit is
// max(its free time, 1 us + 2% of the hand-off), so half of the gain passes.
// Predicted then: OK at ~1.6-1.7x the honest per-call kernel. H100
// (2026-12-06, session 21, the absolute cuda allowance): CHEAT_DETECTED
// batch_drip.
TEST(RedTeamGpu, r28_chunk_paced) {
  R15Expect("r28_chunk_paced", {{Result::CHEAT_DETECTED, kR15BatchChecks}});
}
// The candidate's first drip call plays the calls' side of the hand-off
// itself (one kernel on the host-mapped staging memory, one synchronize a
// call): its dripped calls cost less than the reference's, a negative excess.
// Predicted then: OK at ~3.5x (r15_chunk_k8's amortized batches). H100
// (2026-12-06, session 21): with three waits a dripped call (34 us, of which
// it skipped ~17; the default: rank_cuda_drip.cc DripWaits) CHEAT_DETECTED
// batch_drip, its calls "shorter than its hand-off" (drip_check.h kShort);
// with one or two waits it skips ~4 us, within the allowance: OK at
// 3.5-3.6x against 1.3x for the honest kernel. A variant padded back up to
// the floor is the stated residual (docs/threat-model.md, row 23).
TEST(RedTeamGpu, r28_drip_agent) {
  R15Expect("r28_drip_agent", {{Result::CHEAT_DETECTED, kR15BatchChecks}});
}
// Round 32 (the lead, against the queued drip batches,
// PKFORGE_DRIP_WAITS=0): r28_drip_agent made to fit either hand-off (it
// spins on `released`; its replayed calls put their inputs back): the least
// a dripped call costs when the candidate plays the calls' side, against
// the harness's path in each mode. H100 (session 22): CHEAT_DETECTED
// batch_drip, "shorter than its hand-off", with three waits (13.7-17.7 us
// against the reference's 26.2-32.8) and queued (12.9-13.0 against
// 17.4-20.4).
TEST(RedTeamGpu, r32_drip_spin_agent) {
  R15Expect("r32_drip_spin_agent", {{Result::CHEAT_DETECTED, kR15BatchChecks}});
}
// Honest (helper-62, round 32): a stream synchronize inside every call, so
// the calls' side cannot run ahead of its GPU in either drip mode. H100
// (session 22, by launch): OK 0.45x with three waits (batch_drip passed),
// 0.41x queued (batch_drip flagged, 3 of 6 slow: the queued mode's noise).
TEST(RedTeamGpu, r32_control_sync_in_run) { Expect("r32_control_sync_in_run", Result::OK); }
// A kernel of a second context, queued behind a stream wait on the
// candidate's drip word (released == 1: a drip batch was just armed), runs
// while the reference's free batch and own drip batch do (DripPair probes no
// idle GPU): the hand-off read off the reference becomes milliseconds.
// Predicted then: OK at ~3.5x; CHEAT outlived_call if a pending stream wait
// takes time slices. H100 (2026-12-06, session 21): TIMEOUT in PHASE_SETUP,
// stuck rank 0 (the rank's synchronize after pkf_setup never returns behind
// the queued wait): the candidate's own status, no time (as gpu_hog_setup).
TEST(RedTeamGpu, r28_drip_ref_hog) {
  ExpectOneOf("r28_drip_ref_hog",
              {{Result::CHEAT_DETECTED, {"outlived_call", "batch_drip", "frozen_while_idle"}},
               {Result::TIMEOUT, {}}},
              0, nullptr, 20);
}
// Blame: the same trigger in front of ~100 GB of copy-engine copies in the
// second context, so that the first rounds to crawl are the reference's free
// batch and own drip batch (no idle probe there). Predicted today:
// HARNESS_ERROR where copies of other contexts wait behind a running copy,
// else the reference merely slowed. Never HARNESS_ERROR; the calls are the
// reference's own algorithm, so an OK must stay within 1.15x. H100
// (2026-12-06, session 21): OK at 0.917x (batches flagged).
TEST(RedTeamGpu, r28_drip_ref_ce_hog) {
  ExpectOneOf("r28_drip_ref_ce_hog",
              {{Result::CHEAT_DETECTED, {"outlived_call", "batch_drip", "frozen_while_idle"}},
               {Result::TIMEOUT, {}},
               {Result::OK, {}}},
              1.15);
}
// Honest: one copy kernel a call plus a cudaMallocAsync'ed temporary freed on
// the stream. The default pool (release threshold 0) gives its memory back at
// every synchronize: once per free-running batch, three times per drip call.
// Predicted then: CHEAT_DETECTED batch_drip (a false positive), or OK with
// batch_drip flagged. Held: OK with batch_drip passed and not flagged. H100
// (2026-12-06, session 21, three waits a dripped call, the pools keeping
// their memory): OK at 0.75x, batch_drip flagged (3 of 6 slow: +2.0 us of
// excess against a 1.7 us allowance; its malloc/free API calls overlap the
// GPU free-running, not dripped). Pending with one wait a call.
TEST(RedTeamGpu, r28_control_malloc_async) {
  if (!HaveGpu()) GTEST_SKIP() << "no usable GPU";
  if (getenv("PKFORGE_REDTEAM_PENDING") == nullptr)
    GTEST_SKIP() << "flagged with three waits (H100); PKFORGE_REDTEAM_PENDING=1 runs it";
  Result r;
  ExpectOneOf("r28_control_malloc_async", {{Result::OK, {}}}, 0, &r);
  for (const auto& c : r.cheat_checks()) {
    if (c.check() == "batch_drip") {
      EXPECT_TRUE(c.passed() && !c.flag_only()) << c.detail();
    }
  }
}
}  // namespace
}  // namespace pkforge::kernels
