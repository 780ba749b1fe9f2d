// The verdict rules of AntiCheat that need no rank processes: batch_progress
// and batch_drip over recorded samples.
#include "kernels/harness/checks.h"

#include <cstdlib>

#include "gtest/gtest.h"
#include "kernels/harness/judge_internal.h"
#include "kernels/harness/outcome.h"
#include "kernels/harness/progress_probe.h"
#include "kernels/harness/verdict.h"

namespace pkforge::kernels {
namespace {

using Result = pkforge::v1::EvaluationResult;

const pkforge::v1::CheatCheck* Find(Outcome& out, const std::string& name) {
  out.PublishChecks();
  for (const auto& c : out.result().cheat_checks())
    if (c.check() == name) return &c;
  return nullptr;
}

// Three probes with nothing done at half the batch, three slow drip batches.
TimingSamples Anomalous(double ref_us, double cand_us) {
  TimingSamples s;
  s.batch = 128;
  for (int i = 0; i < 6; ++i) {
    s.ref_us.push_back(ref_us);
    s.cand_us.push_back(cand_us);
  }
  for (int i = 0; i < 3; ++i) {
    s.progress.push_back(ProgressSample{0.5, 0.0, true});
    DripSample d;
    d.ref_service_us = ref_us + 25;
    d.ref_free_us = ref_us;
    d.cand_service_us = cand_us + 25 + 4 * cand_us + 20;  // far beyond twice its free time
    s.drip.push_back(d);
  }
  return s;
}

// One check's rule over recorded samples; the outcome with its checks published.
void Judge(const std::string& check, const TimingSamples& s, Outcome* out,
           const char* backend = "host") {
  LaunchOptions o;
  o.backend = backend;
  AntiCheat a(o, nullptr, out);
  if (check == "batch_progress")
    a.BatchProgress(s);
  else
    a.BatchDrip(s);
}

TEST(AntiCheatRules, AmortizationEvidenceConvictsACandidateFasterThanTheReference) {
  for (const char* check : {"batch_progress", "batch_drip"}) {
    Outcome out;
    Judge(check, Anomalous(35, 5), &out);
    EXPECT_EQ(out.result().status(), Result::CHEAT_DETECTED) << check;
    const auto* c = Find(out, check);
    ASSERT_NE(c, nullptr) << check;
    EXPECT_FALSE(c->passed());
    EXPECT_FALSE(c->flag_only());
  }
}

// No faster than the reference: nothing forged, only a flag (helper-fp6:
// an honest thread pool at world size 1, 0.08x, behind on its probes; the
// helper_pool control, 0.56x, slow on its drip batches).
TEST(AntiCheatRules, TheSameEvidenceOnlyFlagsACandidateNoFasterThanTheReference) {
  for (const char* check : {"batch_progress", "batch_drip"}) {
    Outcome out;
    Judge(check, Anomalous(35, 60), &out);
    EXPECT_TRUE(out.undecided()) << check;
    const auto* c = Find(out, check);
    ASSERT_NE(c, nullptr) << check;
    EXPECT_FALSE(c->passed());
    EXPECT_TRUE(c->flag_only());
    EXPECT_NE(c->detail().find("no faster than the reference"), std::string::npos) << c->detail();
  }
}

// cuda: probes that find the candidate behind convict (the H200 whole-batch
// NCCL-group fuser of 2026-12-05 was OK at 12.5x with this check flagging);
// probes that find it ahead only flag, since queued GPU work runs on while
// the calls are counted.
// batch_consistency on cuda: a short/long ratio over twice the
// reference's convicts a candidate faster than the reference and only
// flags one that is not (H100, 2026-12-06: the honest naive conv2d_halo,
// two synchronizations a call, at 0.53x: 144.56 / 50.90 us against the
// reference's 30.59 / 24.19, 2.25x, was CHEAT_DETECTED).
TEST(AntiCheatRules, BatchConsistencyConvictsOnlyACandidateFasterThanTheReference) {
  auto judge = [](double cand_short, double cand_long, double cand_median) {
    TimingSamples s;
    s.batch = 128;
    s.short_len = 32;
    s.ref_short_walls = {30.59, 31.0};
    s.cand_short_walls = {cand_short, cand_short + 2};
    for (int i = 0; i < 6; ++i) {
      s.ref_us.push_back(i == 0 ? 24.19 : 43.07);
      s.cand_us.push_back(i == 0 ? cand_long : cand_median);
    }
    LaunchOptions o;
    o.backend = "cuda";
    Outcome out;
    AntiCheat a(o, nullptr, &out);
    a.BatchConsistency(s);
    const pkforge::v1::CheatCheck* c = Find(out, "batch_consistency");
    EXPECT_NE(c, nullptr);
    return std::make_pair(out.result().status(), c == nullptr ? false : c->flag_only() && !c->passed());
  };
  const auto slow = judge(144.56, 50.90, 77.98);
  EXPECT_NE(slow.first, Result::CHEAT_DETECTED);
  EXPECT_TRUE(slow.second);
  // The same ratio from a candidate faster than the reference: convicted.
  const auto fast = judge(144.56 / 5, 50.90 / 5, 77.98 / 5);
  EXPECT_EQ(fast.first, Result::CHEAT_DETECTED);
}

TEST(AntiCheatRules, OnCudaBehindConvictsAndAheadFlags) {
  Outcome behind;
  Judge("batch_progress", Anomalous(6.4, 0.5), &behind, "cuda");
  EXPECT_EQ(behind.result().status(), Result::CHEAT_DETECTED);
  TimingSamples s = Anomalous(6.4, 0.5);
  for (ProgressSample& p : s.progress) p = ProgressSample{0.4, 1.0, true};
  Outcome ahead;
  Judge("batch_progress", s, &ahead, "cuda");
  EXPECT_TRUE(ahead.undecided());
  const auto* c = Find(ahead, "batch_progress");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->flag_only());
  EXPECT_NE(c->detail().find("\"ahead\" only flags"), std::string::npos) << c->detail();
  Outcome host;
  Judge("batch_progress", s, &host);
  EXPECT_EQ(host.result().status(), Result::CHEAT_DETECTED);
}

// Measurements known only at the end go into a passed check's detail, never
// into a failed one's (its detail is the evidence).
TEST(AntiCheatRules, LateMeasurementsAmendOnlyPassedChecks) {
  Outcome out;
  out.AddCheck("outlived_call", true, false, "no thread outlived a call");
  out.AddCheck("poison_unwritten", false, false, "3 elements unwritten");
  out.AppendToPassedDetail("outlived_call", " (idle 20 us)");
  out.AppendToPassedDetail("poison_unwritten", " (idle 20 us)");
  out.AppendToPassedDetail("absent", " (idle 20 us)");
  EXPECT_EQ(Find(out, "outlived_call")->detail(), "no thread outlived a call (idle 20 us)");
  EXPECT_EQ(Find(out, "poison_unwritten")->detail(), "3 elements unwritten");
  EXPECT_EQ(Find(out, "absent"), nullptr);
}

// cuda idle probes (H200, 2026-12-05): honest candidates 19-23 us at the
// median and 175 us at most; a persistent kernel in a second context of the
// candidate's 3.2 ms on every probe (each under the 5 ms single-probe limit).
TEST(AntiCheatRules, IdleProbesThatAllWaitATimeSliceConvict) {
  std::vector<int64_t> honest(19, 19'000);
  honest[3] = 175'000;
  honest[7] = 4'900'000;  // one stall of another process: the median holds
  const IdleLatency h = JudgeIdleLatency(honest);
  EXPECT_FALSE(h.busy) << h.detail;
  EXPECT_NE(h.detail.find("19 us at the median, 4900 us at most, 19 probes"), std::string::npos)
      << h.detail;
  const IdleLatency hog = JudgeIdleLatency(std::vector<int64_t>(19, 3'222'000));
  EXPECT_TRUE(hog.busy) << hog.detail;
  // Too few probes to tell (an evaluation that stopped early).
  EXPECT_FALSE(JudgeIdleLatency({3'222'000, 3'222'000}).busy);
  EXPECT_FALSE(JudgeIdleLatency({}).busy);
}

// cuda, around the reference's timed batches (the candidate frozen): a hog
// the candidate queued behind a long copy (red team round 8
// delayed_hog_copy_engine) makes the probes it overlaps wait a time slice;
// one wait is a hiccup, two convict.
TEST(AntiCheatRules, ReferenceIdleProbesThatWaitTwiceConvict) {
  std::vector<int64_t> honest(40, 21'000);
  honest[5] = 175'000;
  honest[9] = 3'300'000;  // one stall of the driver
  const IdleLatency h = JudgeReferenceIdle(honest);
  EXPECT_FALSE(h.busy) << h.detail;
  EXPECT_NE(h.detail.find("3300 us at most, 1 of 40 over 500 us"), std::string::npos) << h.detail;
  std::vector<int64_t> hog = honest;
  hog[20] = 3'222'000;  // a second time slice: the hog overlapped two probes
  const IdleLatency busy = JudgeReferenceIdle(hog);
  EXPECT_TRUE(busy.busy) << busy.detail;
  EXPECT_NE(busy.detail.find("2 of 40 over 500 us"), std::string::npos) << busy.detail;
  EXPECT_FALSE(JudgeReferenceIdle({}).busy);
  EXPECT_TRUE(JudgeReferenceIdle({600'000, 600'000}).busy);
}

// The official time when the batches were flagged: a candidate that fused
// 4 of its 6 timed batches (red team round 10 probe_window_front, ~1.5x over
// its honest speed, probes flagged but not convicting) keeps no gain at the
// 75th percentile; unflagged, the median stands.
TEST(Verdict, OfficialTimeIsThe75thPercentileWhenBatchesAreFlagged) {
  const std::vector<double> fused_4_of_6 = {2.7, 2.8, 2.8, 2.9, 4.2, 4.3};
  EXPECT_NEAR(OfficialCandidateTime(fused_4_of_6, false), 2.85, 1e-9);
  EXPECT_NEAR(OfficialCandidateTime(fused_4_of_6, true), 0.25 * 2.9 + 0.75 * 4.2, 1e-9);
  EXPECT_EQ(OfficialCandidateTime({}, true), 0);
  Outcome out;
  out.AddCheck("batch_progress", false, true, "3 of 9 anomalous: flagged");
  out.AddCheck("batch_drip", true, false, "consistent");
  EXPECT_TRUE(out.Failed("batch_progress"));
  EXPECT_FALSE(out.Failed("batch_drip"));
  EXPECT_FALSE(out.Failed("batch_consistency"));
}

// host: beside other load, the reference's batches of ~0.1 ms read 1.1 or
// 24-28 us a call (a time slice landed in them): those run again; ordinary
// spread does not.
// cuda batches are sized at the reference's speed (1024 calls for a 7 us
// call); a candidate over 1 ms a call slower gets batches up to 8x shorter,
// so its timing phase fits its limit (red team patch_event_timing on the
// H100: 5 ms a call, 5 s a batch, TIMEOUT at 60 s). Honest candidates,
// whose trial rounds only add their thaw and freeze, keep the reference's.
TEST(Verdict, ACandidateFarSlowerThanTheReferenceGetsShorterBatches) {
  using judge_internal::BatchCalls;
  const double o = 400;  // us: the judge's round trip, in every trial wall
  const std::vector<double> ref = {402, 403, 404};  // 2 us a call: 2 ms / 2 us
  EXPECT_EQ(BatchCalls(ref, {}, o, 1024, true), 1000u);
  EXPECT_EQ(BatchCalls(ref, {700, 690, 720}, o, 1024, true), 1000u);  // thaw + freeze
  // 5 ms a call: at most 8x shorter (16 us a call counted: 2 ms / 16 us).
  EXPECT_EQ(BatchCalls(ref, {5402, 5410, 5420}, o, 1024, true), 125u);
  // 1.5 ms more a call: 2 + 1500 us, bounded at 16 us as well.
  EXPECT_EQ(BatchCalls(ref, {1902}, o, 1024, true), 125u);
  // The host too, at most 4x shorter (red team round 20: an honest candidate
  // 210x slower than the reference got TIMEOUT with the reference's batches);
  // its thaw and freeze alone change nothing.
  const uint32_t host = BatchCalls(ref, {}, o, 1024, false);
  EXPECT_EQ(BatchCalls(ref, {700, 690}, o, 1024, false), host);
  EXPECT_EQ(BatchCalls(ref, {5400}, o, 1024, false), std::max(16u, (host + 3) / 4));
}

TEST(Verdict, OnlyAReferenceBatchOverTwiceItsFastestRunsAgain) {
  EXPECT_TRUE(ReferenceBatchDisturbed(24.4, 1.1));
  EXPECT_TRUE(ReferenceBatchDisturbed(2.3, 1.1));
  EXPECT_FALSE(ReferenceBatchDisturbed(1.5, 1.1));
  EXPECT_FALSE(ReferenceBatchDisturbed(35.0, 0));  // no fastest yet
}

// Every probe or drip batch inconclusive (starved): nothing judged, and the
// check says so (a flag), never a silent pass (red team round 8: a spinner
// process made every drip batch read starved).
TEST(AntiCheatRules, NothingConclusiveIsFlaggedNotPassed) {
  for (const char* check : {"batch_progress", "batch_drip"}) {
    TimingSamples s = Anomalous(35, 5);
    for (ProgressSample& p : s.progress) p.starved = true;
    for (DripSample& d : s.drip) d.starved = true;
    Outcome out;
    Judge(check, s, &out);
    EXPECT_TRUE(out.undecided()) << check;
    const auto* c = Find(out, check);
    ASSERT_NE(c, nullptr) << check;
    EXPECT_FALSE(c->passed()) << check;
    EXPECT_TRUE(c->flag_only()) << check;
    EXPECT_NE(c->detail().find("not judged"), std::string::npos) << c->detail();
  }
  // Inconclusive for want of calls (the default sizes), not for load: said
  // so, not flagged.
  for (const char* check : {"batch_progress", "batch_drip"}) {
    TimingSamples s = Anomalous(35, 5);
    for (ProgressSample& p : s.progress) p.calls = 3;
    for (DripSample& d : s.drip) d.calls = 3;
    Outcome out;
    Judge(check, s, &out);
    const auto* c = Find(out, check);
    ASSERT_NE(c, nullptr) << check;
    EXPECT_TRUE(c->passed()) << check << ": " << c->detail();
    EXPECT_NE(c->detail().find("not judged"), std::string::npos) << c->detail();
  }
}

// Every probe's stop took hold late (the judge could not send it in time:
// red team round 13 r13_late_stop_whole held the ranks' CPU with a long
// slice): flagged when the candidate is over 1.5x faster than the
// reference, so the time is its 75th percentile; said only when it is not.
TEST(AntiCheatRules, LateStopsOnEveryProbeFlagAFastCandidate) {
  TimingSamples s = Anomalous(35, 5);
  for (ProgressSample& p : s.progress) p.late_stop = true;
  Outcome out;
  Judge("batch_progress", s, &out);
  EXPECT_TRUE(out.undecided());
  const auto* c = Find(out, "batch_progress");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->passed()) << c->detail();
  EXPECT_TRUE(c->flag_only());
  EXPECT_NE(c->detail().find("the stops took hold late"), std::string::npos) << c->detail();
  TimingSamples slow = Anomalous(35, 25);  // 1.4x: the stops of short batches are often late
  for (ProgressSample& p : slow.progress) p.late_stop = true;
  Outcome out2;
  Judge("batch_progress", slow, &out2);
  const auto* c2 = Find(out2, "batch_progress");
  ASSERT_NE(c2, nullptr);
  EXPECT_TRUE(c2->passed()) << c2->detail();
}

// A candidate that parks its thread-group leader (where the judge looks for
// the harness's thread) makes every probe read main_idle (red team round 15
// r15_parked_leader_*: OK 6.2-16x, batch_progress passed "not judged"). Over
// 1.25x faster than the reference the probes are judged on what they found
// (round 16: a fuser held under a 1.5x gate passed at 1.04-1.44x); within
// noise of the reference (identical code) or slower, the idle excuse stands
// (an honest thread pool at 0.08x).
TEST(AntiCheatRules, IdleMainThreadsExcuseNoProbeOfAFastCandidate) {
  TimingSamples s = Anomalous(35, 5);
  for (ProgressSample& p : s.progress) p.main_idle = true;
  Outcome out;
  Judge("batch_progress", s, &out);
  EXPECT_EQ(out.result().status(), Result::CHEAT_DETECTED);
  const auto* c = Find(out, "batch_progress");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->detail().find("no excuse"), std::string::npos) << c->detail();
  TimingSamples capped = Anomalous(35, 25);  // 1.4x
  for (ProgressSample& p : capped.progress) p.main_idle = true;
  Outcome out1;
  Judge("batch_progress", capped, &out1);
  EXPECT_EQ(out1.result().status(), Result::CHEAT_DETECTED);
  TimingSamples slow = Anomalous(35, 30);  // 1.17x: identical code plus noise
  for (ProgressSample& p : slow.progress) p.main_idle = true;
  Outcome out2;
  Judge("batch_progress", slow, &out2);
  EXPECT_TRUE(out2.undecided());
  const auto* c2 = Find(out2, "batch_progress");
  ASSERT_NE(c2, nullptr);
  EXPECT_NE(c2->detail().find("not judged"), std::string::npos) << c2->detail();
}

// Batches of fewer than 8 calls get no probes (each would be inconclusive,
// and unsettled probes extend the schedule); the check says so.
TEST(AntiCheatRules, BatchesTooShortToProbeSaySo) {
  TimingSamples s = Anomalous(35, 5);
  s.progress.clear();
  s.batch = 3;
  Outcome out;
  Judge("batch_progress", s, &out);
  const auto* c = Find(out, "batch_progress");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->passed());
  EXPECT_NE(c->detail().find("not probed: batches of 3 calls"), std::string::npos) << c->detail();
}

// A conviction settles the probes only once two more came after it first
// held: a burst of load that made an honest candidate read behind is
// outvoted by the probes after it (red team round 13: control_flag_epoch
// convicted once in 190 launches, probes behind, consistent, behind,
// behind); a fuser's later probes stay behind.
TEST(ProgressSettledRule, AConvictionMustHoldForTwoMoreProbes) {
  const ProgressSample behind{0.5, 0.0, true}, consistent{0.5, 0.5, true};
  std::vector<ProgressSample> v = {behind, consistent, behind, behind};
  EXPECT_TRUE(JudgeProgress(v).cheat);
  EXPECT_FALSE(ProgressSettled(v, 3));  // held from the 4th probe only
  v.push_back(consistent);
  v.push_back(consistent);
  EXPECT_FALSE(JudgeProgress(v).cheat);  // 3 of 6: the burst is outvoted
  EXPECT_FALSE(ProgressSettled(v, 3));   // a mix: more probes
  std::vector<ProgressSample> fuser = {behind, consistent, behind, behind, behind, behind};
  EXPECT_TRUE(JudgeProgress(fuser).cheat);
  EXPECT_TRUE(ProgressSettled(fuser, 3));
  EXPECT_TRUE(ProgressSettled({consistent, consistent, consistent}, 3));
  EXPECT_FALSE(ProgressSettled({consistent, consistent}, 3));
  // Six probes and not one conclusive (late stops): more would not help.
  ProgressSample late = consistent;
  late.late_stop = true;
  EXPECT_FALSE(ProgressSettled(std::vector<ProgressSample>(5, late), 3));
  EXPECT_TRUE(ProgressSettled(std::vector<ProgressSample>(6, late), 3));
  std::vector<ProgressSample> one = std::vector<ProgressSample>(6, late);
  one.push_back(consistent);
  EXPECT_FALSE(ProgressSettled(one, 3));  // one conclusive: wait for three
}

// The judge's budget of input sets per side and rank: 512 MiB, 2 GiB with
// precise timing (PKFORGE_SET_BUDGET_MB unset, as in CI).
TEST(InputSets, PreciseTimingQuadruplesTheBudget) {
  ASSERT_EQ(std::getenv("PKFORGE_SET_BUDGET_MB"), nullptr);
  EXPECT_EQ(judge_internal::SetBudgetBytes(false), int64_t{512} << 20);
  EXPECT_EQ(judge_internal::SetBudgetBytes(true), int64_t{2048} << 20);
}

}  // namespace
}  // namespace pkforge::kernels
