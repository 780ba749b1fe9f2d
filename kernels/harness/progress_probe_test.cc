#include "kernels/harness/progress_probe.h"

#include "gtest/gtest.h"

namespace pkforge::kernels {
namespace {

TEST(ProgressProbe, HonestProgressIsConsistent) {
  EXPECT_EQ(ClassifyProgress({0.5, 0.45, true}), ProgressFinding::kConsistent);
  EXPECT_EQ(ClassifyProgress({0.3, 0.2, true}), ProgressFinding::kConsistent);
  // Slower than its fastest batch (noise only delays): still consistent.
  EXPECT_EQ(ClassifyProgress({0.7, 0.3, true}), ProgressFinding::kConsistent);
  // Beyond its fastest batch's time, not done yet.
  EXPECT_EQ(ClassifyProgress({1.4, 0.9, true}), ProgressFinding::kConsistent);
}

TEST(ProgressProbe, DeferredCallsAreBehind) {
  EXPECT_EQ(ClassifyProgress({0.5, 0.0, true}), ProgressFinding::kBehind);
  EXPECT_EQ(ClassifyProgress({0.35, 0.05, true}), ProgressFinding::kBehind);
  EXPECT_EQ(ClassifyProgress({2.0, 0.2, true}), ProgressFinding::kBehind);
}

TEST(ProgressProbe, EveryCallDoneEarlyIsAhead) {
  EXPECT_EQ(ClassifyProgress({0.2, 1.0, true}), ProgressFinding::kAhead);
  EXPECT_EQ(ClassifyProgress({0.5, 1.0, true}), ProgressFinding::kAhead);
  // Done at 90% of its fastest batch: a fast batch, not a fused one.
  EXPECT_EQ(ClassifyProgress({0.9, 1.0, true}), ProgressFinding::kConsistent);
}

TEST(ProgressProbe, TooEarlyOrEndedIsInconclusive) {
  EXPECT_EQ(ClassifyProgress({0.1, 0.0, true}), ProgressFinding::kInconclusive);
  EXPECT_EQ(ClassifyProgress({0.5, 0.0, false}), ProgressFinding::kInconclusive);
  EXPECT_EQ(ClassifyProgress({0.2, 1.0, false}), ProgressFinding::kInconclusive);
  // Starved by other load (seen: an honest scatter at world 3 next to two
  // busy loops, 2-4% done at 49-72%): no finding either way.
  EXPECT_EQ(ClassifyProgress({0.6, 0.02, true, true}), ProgressFinding::kInconclusive);
}

// Nothing done while the main threads had hardly run is no evidence (an
// honest 65-thread pool at world size 1, tiny: 0% done at 69-80%, its main
// thread still waking up behind its workers).
// Batches of a few calls (default sizes: B = 2-3): the first call ends
// after a third of the batch, so 0% done at 34% is no finding (an honest
// naive broadcast at world 4 was convicted), and the call in progress counts.
TEST(ProgressProbe, BatchesOfAFewCallsAreInconclusive) {
  ProgressSample s{0.34, 0.0, true};
  s.calls = 3;
  EXPECT_EQ(ClassifyProgress(s), ProgressFinding::kInconclusive);
  s.calls = 16;
  EXPECT_EQ(ClassifyProgress(s), ProgressFinding::kBehind);
  // One call done at 40% of a 16-call batch: with the call in progress,
  // 2/16 >= a quarter of 40%: consistent.
  s.elapsed = 0.4;
  s.done = 1.0 / 16;
  EXPECT_EQ(ClassifyProgress(s), ProgressFinding::kConsistent);
}

TEST(ProgressProbe, MainThreadsThatHardlyRanAreInconclusive) {
  ProgressSample s{0.73, 0.0, true};
  EXPECT_EQ(ClassifyProgress(s), ProgressFinding::kBehind);
  s.main_idle = true;
  EXPECT_EQ(ClassifyProgress(s), ProgressFinding::kInconclusive);
  // Nor where the stop took hold long after it was sent.
  s.main_idle = false;
  s.late_stop = true;
  EXPECT_EQ(ClassifyProgress(s), ProgressFinding::kInconclusive);
  EXPECT_FALSE(JudgeProgress({s, s, s}).cheat);
}

// A main thread that woke late or waited for a CPU only makes a probe look
// behind: every call done at 40% of the batch is ahead whatever the excuse
// (red team round 16 r16_parked_leader_capped: every probe main_idle and
// ahead, excused). A late stop still hides where the probe fell.
TEST(ProgressProbe, AheadIsEvidenceEvenWhereTheMainThreadsHardlyRan) {
  ProgressSample s{0.4, 1.0, true};
  s.main_idle = true;
  EXPECT_EQ(ClassifyProgress(s), ProgressFinding::kAhead);
  s.main_idle = false;
  s.starved = true;
  EXPECT_EQ(ClassifyProgress(s), ProgressFinding::kAhead);
  s.late_stop = true;
  EXPECT_EQ(ClassifyProgress(s), ProgressFinding::kInconclusive);
}

// Waiting for CPUs the candidate's own threads held is no excuse (a spinning
// helper thread would otherwise hide any amortization from every probe): the
// probe stays conclusive and its detail names the cause (CI, b937fc9:
// red team atk_cpu_hog_threads, 0% done at 39%).
TEST(ProgressProbe, OwnThreadsHoldingTheCpusStaysConclusive) {
  ProgressSample s{0.39, 0.0, true};
  s.own_load = true;
  EXPECT_EQ(ClassifyProgress(s), ProgressFinding::kBehind);
  const ProgressVerdict v = JudgeProgress({s, s, s});
  EXPECT_TRUE(v.cheat);
  EXPECT_NE(v.detail.find("(behind, its own threads held the CPUs its calls waited for)"),
            std::string::npos)
      << v.detail;
}

TEST(ProgressProbe, TwoAnomaliesConvictOneFlags) {
  const ProgressVerdict honest = JudgeProgress({{0.4, 0.35, true}, {0.6, 0.5, true}, {0.5, 1.0, false}});
  EXPECT_FALSE(honest.cheat);
  EXPECT_FALSE(honest.flag);
  EXPECT_NE(honest.detail.find("40% of the batch's time: 35% of the calls done (consistent)"),
            std::string::npos)
      << honest.detail;
  const ProgressVerdict once = JudgeProgress({{0.4, 0.0, true}, {0.6, 0.5, true}, {0.5, 0.4, true}});
  EXPECT_FALSE(once.cheat);
  EXPECT_TRUE(once.flag);
  // Two of three conclusive probes anomalous: under 3/4, only a flag (an
  // honest candidate slowed by other load on some probes).
  const ProgressVerdict two_of_three =
      JudgeProgress({{0.4, 0.0, true}, {0.3, 1.0, true}, {0.5, 0.4, true}});
  EXPECT_FALSE(two_of_three.cheat);
  EXPECT_TRUE(two_of_three.flag);
  EXPECT_EQ(two_of_three.anomalous, 2);
  EXPECT_EQ(two_of_three.conclusive, 3);
  const ProgressVerdict twice =
      JudgeProgress({{0.4, 0.0, true}, {0.3, 1.0, true}, {0.1, 0.0, true}, {0.5, 0.0, false}});
  EXPECT_TRUE(twice.cheat);
  EXPECT_NE(twice.detail.find("(behind)"), std::string::npos);
  EXPECT_NE(twice.detail.find("(ahead)"), std::string::npos);
  EXPECT_FALSE(JudgeProgress({}).cheat);
  // Over more probes: four anomalous and 2/3 of the conclusive ones (a
  // fuser stopped late, copying out, looks consistent), not three of five.
  const ProgressSample b{0.5, 0.0, true}, c{0.6, 0.55, true};
  EXPECT_TRUE(JudgeProgress({b, c, b, b, c, b, b}).cheat);
  EXPECT_FALSE(JudgeProgress({b, c, b, c, b}).cheat);
  EXPECT_TRUE(JudgeProgress({b, c, b, c, b}).flag);
}

// cuda (ahead_convicts false): queued GPU work runs on while the calls are
// counted, so "ahead" may be an honest candidate whose host ran ahead of its
// GPU; it flags and is left out of the count. "Behind" still convicts, and
// ahead probes mixed in neither convict nor dilute it.
TEST(ProgressProbe, OnCudaOnlyBehindConvicts) {
  const ProgressSample behind{0.5, 0.0, true}, ahead{0.4, 1.0, true}, ok{0.6, 0.55, true};
  const ProgressVerdict all_ahead = JudgeProgress({ahead, ahead, ahead, ahead}, false);
  EXPECT_FALSE(all_ahead.cheat);
  EXPECT_TRUE(all_ahead.flag);
  EXPECT_EQ(all_ahead.ahead_only, 4);
  EXPECT_EQ(all_ahead.conclusive, 0);
  EXPECT_NE(all_ahead.detail.find("(ahead)"), std::string::npos);
  EXPECT_TRUE(JudgeProgress({ahead, ahead, ahead, ahead}, true).cheat);  // the host rule
  // The H200 whole-batch fuser of 2026-12-05: three of four behind.
  EXPECT_TRUE(JudgeProgress({behind, behind, ok, behind}, false).cheat);
  EXPECT_TRUE(JudgeProgress({behind, ahead, behind, ahead}, false).cheat);
  // Honest probes plus ahead ones: a flag at most.
  const ProgressVerdict honest = JudgeProgress({ok, ahead, ok, ahead, ok}, false);
  EXPECT_FALSE(honest.cheat);
  EXPECT_TRUE(honest.flag);
  EXPECT_EQ(honest.conclusive, 3);
  EXPECT_EQ(honest.anomalous, 0);
  // One behind among honest ones stays a flag, as on the host.
  EXPECT_FALSE(JudgeProgress({behind, ok, ok, ahead}, false).cheat);
}

// Many probes, a steady share of them behind: chunked fusion (red team round
// 13 probe_gap_fuse: 9 of 16 behind, OK at 11.9x, flagged only, the ratios
// needing 3/4 or 2/3) is convicted by the binomial tail rule; a few behind
// among many stays a flag.
// Behind with a few calls done (a chunk's copy-out under way): not stalled,
// which has a rule of its own (below).
TEST(ProgressProbe, ASteadyShareBehindOverManyProbesConvicts) {
  EXPECT_NEAR(BinomialTail(4, 4, 0.05), 6.25e-6, 1e-9);
  EXPECT_NEAR(BinomialTail(16, 0, 0.05), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(BinomialTail(3, 4, 0.05), 0.0);
  const ProgressSample behind{0.5, 0.05, true}, consistent{0.5, 0.5, true};
  auto mix = [&](int b, int c) {
    std::vector<ProgressSample> v(b, behind);  // the order does not matter
    v.insert(v.end(), c, consistent);
    return v;
  };
  const ProgressVerdict chunked = JudgeProgress(mix(9, 7));
  EXPECT_EQ(chunked.anomalous, 9);
  EXPECT_EQ(chunked.conclusive, 16);
  EXPECT_TRUE(chunked.cheat) << chunked.detail;
  EXPECT_TRUE(JudgeProgress(mix(7, 8)).cheat);   // 7 of 15
  EXPECT_TRUE(JudgeProgress(mix(6, 4)).cheat);   // 6 of 10
  const ProgressVerdict few = JudgeProgress(mix(5, 7));  // 5 of 12
  EXPECT_FALSE(few.cheat);
  EXPECT_TRUE(few.flag);
  EXPECT_FALSE(JudgeProgress(mix(6, 9)).cheat);  // 6 of 15
}

// Stalled probes (cuda: under 5% of the calls done after a third of the
// batch): whole-batch fusion reads ~0% until its fused work lands and 100%
// after, past half the batch, where "100%" is consistent. The probes of
// batch_fuse_group on the H100 (session 17, 1024-call batches, ahead not
// convicting): 5 of 10 anomalous, a flag only under the other rules (it was
// OK at 15.3x); convicted by the stall rule. A few stalls among honest
// probes, stalls before a third of the batch, or the host's probes (round 23:
// an honest pool at world 8 on 2 CPUs stalled on 24% of them) stay a flag
// at most.
TEST(ProgressProbe, StalledProbesConvictWholeBatchFusionOnCuda) {
  auto probe = [](double elapsed, double done) {
    ProgressSample s{elapsed, done, true};
    s.calls = 1024;
    return s;
  };
  std::vector<ProgressSample> fuse_group = {probe(0.38, 0), probe(0.44, 0), probe(0.63, 1),
                                            probe(0.73, 1), probe(0.34, 0), probe(0.59, 1),
                                            probe(0.42, 0), probe(0.67, 1), probe(0.52, 0),
                                            probe(0.70, 1)};
  for (int i : {0, 4, 6, 8}) fuse_group[i].own_load = true;  // as read on the H100
  const ProgressVerdict v = JudgeProgress(fuse_group, /*ahead_convicts=*/false);
  EXPECT_EQ(v.anomalous, 5);
  EXPECT_EQ(v.conclusive, 10);
  EXPECT_EQ(v.stalled, 5);
  EXPECT_TRUE(v.cheat) << v.detail;
  // One honest call (or a few) before the fused ones: still stalled (red
  // team round 23 r23_real_first_blast made "no call done" false that way).
  std::vector<ProgressSample> one_first = fuse_group;
  for (ProgressSample& s : one_first)
    if (s.done == 0) s.done = 8.0 / 1024;
  EXPECT_EQ(JudgeProgress(one_first, false).stalled, 5);
  EXPECT_TRUE(JudgeProgress(one_first, false).cheat);
  // Behind with a twentieth of the calls done or more: not stalled, the
  // same counts only flag (the rule is what convicts the fuser above).
  std::vector<ProgressSample> partial = fuse_group;
  for (ProgressSample& s : partial)
    if (s.done == 0) s.done = 0.06;
  const ProgressVerdict p = JudgeProgress(partial, false);
  EXPECT_EQ(p.stalled, 0);
  EXPECT_FALSE(p.cheat) << p.detail;
  EXPECT_TRUE(p.flag);
  // The host: no stall rule (its ahead probes convict, drip batches see
  // fusion). Round 23's honest r20_control_threshold_pool at world 8: 4
  // stalled among 10 conclusive, 5 anomalous: a flag, not a conviction.
  std::vector<ProgressSample> pool(5, probe(0.6, 0.45));
  for (double e : {0.52, 0.40, 0.34, 0.44}) pool.push_back(probe(e, 0));
  pool.push_back(probe(0.39, 0.03));
  const ProgressVerdict host = JudgeProgress(pool, /*ahead_convicts=*/true);
  EXPECT_EQ(host.stalled, 0);
  EXPECT_FALSE(host.cheat) << host.detail;
  EXPECT_TRUE(JudgeProgress(pool, false).cheat);  // the same probes on cuda
  // Honest probes of the same run's identical broadcast (all consistent).
  const ProgressVerdict honest =
      JudgeProgress({probe(0.51, 0.68), probe(0.49, 0.63), probe(0.68, 0.93), probe(0.60, 0.70),
                     probe(0.36, 0.33), probe(0.61, 0.82), probe(0.44, 0.54)},
                    false);
  EXPECT_FALSE(honest.cheat);
  EXPECT_FALSE(honest.flag);
  EXPECT_EQ(honest.stalled, 0);
  // Three stalls among ten, or four stalls before a third of the batch: no
  // conviction.
  std::vector<ProgressSample> three(7, probe(0.5, 0.5));
  for (int i = 0; i < 3; ++i) three.push_back(probe(0.45, 0));
  EXPECT_FALSE(JudgeProgress(three, false).cheat);
  EXPECT_EQ(JudgeProgress(three, false).stalled, 3);
  std::vector<ProgressSample> early(6, probe(0.5, 0.5));
  for (int i = 0; i < 4; ++i) early.push_back(probe(0.31, 0));
  EXPECT_EQ(JudgeProgress(early, false).stalled, 0);
  EXPECT_FALSE(JudgeProgress(early, false).cheat);
  // Four stalls among ten convict (binomial tail 2e-6 at 1%).
  std::vector<ProgressSample> four(6, probe(0.5, 0.5));
  for (int i = 0; i < 4; ++i) four.push_back(probe(0.45, 0));
  EXPECT_TRUE(JudgeProgress(four, false).cheat);
}

// CI, 2026-12-06: naive_host_moe_all2all at world size 1, tiny (batches of
// ~130 us), read 0% done at 48% and 63% of its batch: its first call had
// not started (the continue signal, wake-up and command read took 60-80 us
// beside another test). The start allowance is not counted as batch time
// for "behind"; a candidate that still has nothing done well after it does.
TEST(ProgressProbe, StartAllowanceKeepsALateFirstCallFromReadingBehind) {
  ProgressSample late{0.63, 0.0, true};
  EXPECT_EQ(ClassifyProgress(late), ProgressFinding::kBehind);  // without the allowance
  late.start_allowance = 0.38;  // 50 us of a 130 us batch
  EXPECT_EQ(ClassifyProgress(late), ProgressFinding::kInconclusive);
  EXPECT_DOUBLE_EQ(BehindElapsed(late), 0.25);
  ProgressSample deferred{1.0, 0.0, true};
  deferred.start_allowance = 0.38;
  EXPECT_EQ(ClassifyProgress(deferred), ProgressFinding::kBehind);
  // Two such probes no longer convict the honest candidate; the fuser's do.
  std::vector<ProgressSample> honest(3, late), fuser(3, deferred);
  EXPECT_FALSE(JudgeProgress(honest).cheat);
  EXPECT_TRUE(JudgeProgress(fuser).cheat);
}

// "Ahead" keeps the judge's whole clock: every call done at 45% of the
// batch is no start delay.
TEST(ProgressProbe, AheadIgnoresTheStartAllowance) {
  ProgressSample s{0.45, 1.0, true};
  s.start_allowance = 0.38;
  EXPECT_EQ(ClassifyProgress(s), ProgressFinding::kAhead);
}

// A rank's main thread that waited for a CPU while the candidate's other
// threads hardly ran waited behind other processes, however much it ran
// itself (CI, 2026-12-06: a one-thread naive candidate read "own_load" and
// was judged); helper threads that ran make the wait its own.
TEST(ProgressProbe, WaitBesideIdleOwnThreadsIsOtherProcessesLoad) {
  const double window = 100e3;
  const ProbeLoad alone = AttributeProbeWait(0.5, 0.05, 0.7, /*other_cpu_ns=*/0, window, true);
  EXPECT_TRUE(alone.starved);
  EXPECT_FALSE(alone.own_load);
  EXPECT_TRUE(alone.own_threads_idle);
  const ProbeLoad helpers = AttributeProbeWait(0.5, 0.05, 0.7, /*other_cpu_ns=*/40e3, window, true);
  EXPECT_FALSE(helpers.starved);
  EXPECT_TRUE(helpers.own_load);
  // Other threads that ran half the window are not idle, however long the
  // main thread waited (red team round 24 r24_exit_thread_starve: waits of
  // 1.1-1.8 windows beside 0.4-0.55 windows of its exiting thread).
  const ProbeLoad spinner = AttributeProbeWait(1.5, 0.05, 0.9, /*other_cpu_ns=*/50e3, window, true);
  EXPECT_FALSE(spinner.own_threads_idle);
  EXPECT_FALSE(spinner.starved);
  EXPECT_TRUE(spinner.own_load);
  // Under the yardstick: neither.
  const ProbeLoad calm = AttributeProbeWait(0.2, 0.05, 0.7, 0, window, true);
  EXPECT_FALSE(calm.starved || calm.own_load);
  // Threads that left their CPUs unused: starved, as before.
  EXPECT_TRUE(AttributeProbeWait(0.5, 0.05, 0.3, 40e3, window, true).starved);
  // Several ranks: their main threads hold each other up (a fuser's
  // spinning ranks), so idle helper threads excuse nothing.
  const ProbeLoad ranks = AttributeProbeWait(0.5, 0.05, 0.7, 0, window, false);
  EXPECT_FALSE(ranks.starved);
  EXPECT_TRUE(ranks.own_load);

  // The reference's batch beside it did not wait: the wait stays other
  // processes' only where its own threads were found idle.
  ProgressSample p{0.6, 0.0, true, true};
  p.own_threads_idle = alone.own_threads_idle;
  EXPECT_TRUE(StarvedAlthoughReferenceWasNot(p));
  p.own_threads_idle = ranks.own_threads_idle;
  EXPECT_FALSE(StarvedAlthoughReferenceWasNot(p));
}

}  // namespace
}  // namespace pkforge::kernels
