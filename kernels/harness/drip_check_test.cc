#include "kernels/harness/drip_check.h"

#include "gtest/gtest.h"
#include "kernels/harness/protocol.h"

namespace pkforge::kernels {
namespace {

DripSample S(double ref_service, double cand_service, bool starved, double ref_free = 0) {
  DripSample s;
  s.ref_service_us = ref_service;
  s.cand_service_us = cand_service;
  s.starved = starved;
  s.ref_free_us = ref_free;
  return s;
}

// Free-running per call: reference 35 us. Hand-offs cost the reference 10 us.
TEST(DripCheck, HonestCandidatesAreConsistentAtAnySpeed) {
  // As fast as the reference, the same hand-off cost.
  EXPECT_EQ(ClassifyDrip(S(45, 46, false), 35, 35), DripFinding::kConsistent);
  // Honestly 3.5x faster: 10 us free, 20 us dripped.
  EXPECT_EQ(ClassifyDrip(S(45, 20, false), 35, 10), DripFinding::kConsistent);
  // Honestly slower.
  EXPECT_EQ(ClassifyDrip(S(45, 110, false), 35, 100), DripFinding::kConsistent);
  // A 1 us call with hand-offs a few us dearer than the reference's (another
  // process watches it): within the noise allowance.
  EXPECT_EQ(ClassifyDrip(S(45, 15, false), 35, 1), DripFinding::kConsistent);
}

TEST(DripCheck, AmortizationShowsAsSlowDripCalls) {
  // Red team lookahead_private_k4: 10 us per call free-running (3.5x), but a
  // call alone costs what the reference's does.
  EXPECT_EQ(ClassifyDrip(S(45, 46, false), 35, 10), DripFinding::kSlow);
  // A 2x gain is at the limit; beyond it, slow.
  EXPECT_EQ(ClassifyDrip(S(45, 45, false), 35, 17.5), DripFinding::kConsistent);
  EXPECT_EQ(ClassifyDrip(S(45, 45, false), 35, 15), DripFinding::kSlow);
}

// cuda (world 1, tiny allreduce, H100 2026-12-05): the reference's call 7 us
// free-running; the honest kernel-per-call candidate 5.2 us; the chunked
// amortizer r15_chunk_k8 2 us free-running, a call alone what the honest
// one costs. Hand-offs (copies on the GPU, processes on CPUs to spare) are
// steadier than the host's: a 3 us gain a call is not noise there.
DripSample Cuda(double ref_service, double cand_service) {
  DripSample s = S(ref_service, cand_service, false);
  s.cuda = true;
  return s;
}
TEST(DripCheck, CudaHandOffsAreJudgedWithATighterAllowance) {
  EXPECT_EQ(ClassifyDrip(Cuda(20, 18.5), 7, 5.2), DripFinding::kConsistent);
  EXPECT_EQ(ClassifyDrip(Cuda(20, 20.5), 7, 7), DripFinding::kConsistent);
  EXPECT_EQ(ClassifyDrip(Cuda(20, 18.5), 7, 2), DripFinding::kSlow);
  // The same numbers on the host backend are within its noise allowance.
  EXPECT_EQ(ClassifyDrip(S(20, 18.5, false), 7, 2), DripFinding::kConsistent);
  // Measured on an H100 (2026-12-06; per call dripped: reference,
  // candidate; free-running: reference, candidate): the reference as the
  // candidate, one kernel a call (the honest case with the largest excess),
  // a CUDA graph a call; then the chunked amortizer at its smallest excess.
  EXPECT_EQ(ClassifyDrip(Cuda(21.13, 21.69), 3.46, 3.79), DripFinding::kConsistent);
  EXPECT_EQ(ClassifyDrip(Cuda(21.64, 21.61), 3.62, 3.03), DripFinding::kConsistent);
  EXPECT_EQ(ClassifyDrip(Cuda(22.01, 20.23), 3.75, 2.34), DripFinding::kConsistent);
  EXPECT_EQ(ClassifyDrip(Cuda(22.04, 21.91), 3.56, 1.33), DripFinding::kSlow);
  // Red team round 28 r28_chunk_paced: the amortizer padded to 1.8 us a
  // call free-running, its dripped call what the honest kernel's costs:
  // an excess of 1.8 us is slow although it is under its own free time.
  EXPECT_EQ(ClassifyDrip(Cuda(21.64, 21.61), 3.62, 1.8), DripFinding::kSlow);
}

// Red team round 28 r28_drip_agent: the candidate's first dripped call does
// the rest of the batch's hand-offs itself (no staging copies, one
// synchronize), ~10 us a call less than the harness's hand-off, so that a
// launch amortizer's excess (+2..8 us) reads negative. The floor is the
// reference's hand-off without its call (its dripped call less its call
// alone, measured in the reference's own drip batch): every call pays it.
DripSample CudaCall(double ref_service, double cand_service, double ref_call) {
  DripSample s = Cuda(ref_service, cand_service);
  s.ref_floor_us = ref_service - ref_call;
  return s;
}
TEST(DripCheck, CudaDripCallsCannotCostLessThanTheHandOffWithoutTheCall) {
  // The agent: 1.33 us a call free-running, 11.9 us dripped; the
  // reference's dripped call 22.04 us, of which its call alone 8 us.
  EXPECT_EQ(ClassifyDrip(CudaCall(22.04, 11.9, 8), 3.56, 1.33), DripFinding::kShort);
  // The honest kernel-per-call and the reference as candidate.
  EXPECT_EQ(ClassifyDrip(CudaCall(21.64, 21.61, 8), 3.62, 3.03), DripFinding::kConsistent);
  EXPECT_EQ(ClassifyDrip(CudaCall(21.13, 21.69, 8), 3.46, 3.79), DripFinding::kConsistent);
  // An honest candidate that waits for its work inside its call, faster
  // than a slow reference (free 20 us, alone 27 us: its launch and the wait
  // behind its work are the reference's hand-off too, not the candidate's):
  // 13 us free, 28 us dripped. Under the reference's whole hand-off (-6 us
  // excess) but not under the floor.
  EXPECT_EQ(ClassifyDrip(CudaCall(41, 28, 27), 20, 13), DripFinding::kConsistent);
  // Without the call's time (host backend, or not measured): no floor.
  EXPECT_EQ(ClassifyDrip(Cuda(22.04, 11.9), 3.56, 1.33), DripFinding::kConsistent);
  DripSample host = S(22.04, 11.9, false);
  host.ref_floor_us = 14;
  EXPECT_EQ(ClassifyDrip(host, 3.56, 1.33), DripFinding::kConsistent);
  // Two short batches of three convict, as two slow ones do; one flags.
  const DripVerdict agent = JudgeDrip(
      {CudaCall(22.04, 11.9, 8), CudaCall(21.9, 12.3, 8.2), CudaCall(22.1, 12.0, 7.9)}, 3.56, 1.33);
  EXPECT_TRUE(agent.cheat);
  EXPECT_EQ(agent.short_calls, 3);
  EXPECT_EQ(agent.slow, 0);
  EXPECT_NE(agent.detail.find("(shorter than its hand-off)"), std::string::npos) << agent.detail;
  const DripVerdict once = JudgeDrip(
      {CudaCall(22.04, 11.9, 8), CudaCall(21.9, 21.3, 8), CudaCall(22.1, 21.8, 8)}, 3.56, 3.5);
  EXPECT_FALSE(once.cheat);
  EXPECT_TRUE(once.flag);
}

// Measured on an H100 (session 21, three waits a dripped call; the
// diagnostic lines of scripts/gpu-session.sh s21a: dripped per call,
// candidate and reference, and the reference's call alone): r28_drip_agent
// (free-running 1.59 us a call, the reference 5.26) short on all three drip
// batches; the honest one-kernel candidate (free 4.6) and the reference as
// candidate (free 5.5) consistent.
TEST(DripCheck, MeasuredOnAnH100WithThreeWaits) {
  const DripVerdict agent = JudgeDrip(
      {CudaCall(29.13, 15.21, 10.70), CudaCall(34.04, 16.40, 12.15), CudaCall(29.57, 18.21, 10.55)},
      5.26, 1.59, 1.5);
  EXPECT_TRUE(agent.cheat);
  EXPECT_EQ(agent.short_calls, 3);
  const DripVerdict copy = JudgeDrip(
      {CudaCall(34.23, 32.95, 12.00), CudaCall(33.56, 32.39, 11.71), CudaCall(33.32, 32.92, 11.90)},
      5.4, 4.6, 4.4);
  EXPECT_FALSE(copy.cheat || copy.flag) << copy.detail;
  const DripVerdict ref = JudgeDrip(
      {CudaCall(34.33, 34.68, 11.74), CudaCall(34.71, 34.25, 12.50), CudaCall(33.92, 34.24, 11.74)},
      5.3, 5.5, 5.3);
  EXPECT_FALSE(ref.cheat || ref.flag) << ref.detail;
}

// Red team round 30, finding 8: at world size > 1 the floor is each rank's
// own (its gap less its call alone), the least of them; a rank that waited in
// a collective for a slower peer has a long call alone and an ordinary gap.
TEST(DripCheck, TheFloorIsEachReferenceRanksOwn) {
  // Rank 0: gap 24 us, call alone 10 (hand-off 14); rank 1: gap 22, call
  // alone 12 (10). The greatest gap less the greatest call would be 12.
  EXPECT_DOUBLE_EQ(RefHandOffFloorUs({24000, 22000}, {10000, 12000}), 10.0);
  // A rank without the measurement (0) is left out; none: 0 (no floor).
  EXPECT_DOUBLE_EQ(RefHandOffFloorUs({24000, 22000}, {0, 12000}), 10.0);
  EXPECT_DOUBLE_EQ(RefHandOffFloorUs({24000}, {0}), 0.0);
  // A rank whose call alone took its whole gap: no floor at all.
  EXPECT_DOUBLE_EQ(RefHandOffFloorUs({9000, 22000}, {9500, 12000}), 0.0);
  EXPECT_DOUBLE_EQ(RefHandOffFloorUs({}, {}), 0.0);
}

// Red team round 30, finding 4: the floor is judged against the candidate's
// 25th percentile of free-running times, less 15% of it. A candidate that
// waits inside its call, whose timed batches' median load raised to 13 us
// (25th percentile 12) and whose dripped call reads its inputs warm from the
// copy just before (22.5 us): under the floor against the median, not
// against the low quantile. The agent stays short.
TEST(DripCheck, TheFloorIsJudgedAgainstTheCandidatesLowFreeTime) {
  EXPECT_EQ(ClassifyDrip(CudaCall(41, 22.5, 27), 20, 13), DripFinding::kShort);
  EXPECT_EQ(ClassifyDrip(CudaCall(41, 22.5, 27), 20, 13, 12), DripFinding::kConsistent);
  EXPECT_EQ(ClassifyDrip(CudaCall(22.04, 11.9, 8), 3.56, 1.33, 1.25), DripFinding::kShort);
  const DripFree f = FreeTimes({5.0, 5.2}, {1.0, 2.0, 3.0, 4.0, 5.0});
  EXPECT_DOUBLE_EQ(f.cand_us, 3.0);
  EXPECT_DOUBLE_EQ(f.cand_low_us, 2.0);
}

// How many calls a cuda drip batch can have: the reference rank buffers
// each call's outputs and inputs (256 MiB at most, its snapshots' bound
// too); fewer than kMinDripCalls: none.
TEST(DripCheck, CudaDripBatchesOnlyWhereTheReferenceCanBufferEnoughCalls) {
  EXPECT_EQ(CudaDripCalls(4096, 4096), kDripCalls);
  EXPECT_EQ(CudaDripCalls(0, 0), kDripCalls);
  EXPECT_EQ(CudaDripCalls(int64_t{8} << 20, int64_t{8} << 20), 16u);
  EXPECT_EQ(CudaDripCalls(int64_t{16} << 20, int64_t{14} << 20), 0u);
  EXPECT_GE(CudaDripCalls(int64_t{8} << 20, int64_t{8} << 20), static_cast<uint32_t>(kMinDripCalls));
  EXPECT_EQ(CudaDripCalls(int64_t{64} << 20, int64_t{64} << 20), 0u);
}

// The reference's free time: the smaller of the batch next to its drip and
// its timed batches' figure. Red team round 6: on a loaded host the timed
// median swung 35-90 us while the drip stayed at 63 us, and an honest 6 us
// candidate, dripped at 44 us, was convicted; helper-fp6: the batch next to
// the drip read 209.7 us once (a time slice of a busy loop) against 21-23.
TEST(DripCheck, TheReferencesFreeTimeIsTheLeastDisturbed) {
  EXPECT_EQ(ClassifyDrip(S(63.5, 44, false), 50, 6), DripFinding::kSlow);
  EXPECT_EQ(ClassifyDrip(S(63.5, 44, false, 36), 50, 6), DripFinding::kConsistent);
  EXPECT_EQ(ClassifyDrip(S(63.5, 44, false, 209.7), 36, 6), DripFinding::kConsistent);
}

// helper-redteam11, world 1 beside a busy loop pinned on the ranks' CPU:
// the reference's free-running batches (1 us a call) took one of its time
// slices (24 us a call) and its drip read 9 us: a hand-off of 0, and an
// honest 1.2 us candidate dripped at 9.6 us was "slow". Free no faster than
// dripped means the free time was disturbed: inconclusive.
TEST(DripCheck, AReferenceFreeTimeAboveItsDripIsInconclusive) {
  EXPECT_EQ(ClassifyDrip(S(9.12, 9.58, false, 24.29), 24.29, 1.2), DripFinding::kInconclusive);
  EXPECT_EQ(ClassifyDrip(S(9.12, 9.58, false, 1.1), 24.29, 1.2), DripFinding::kConsistent);
}

// The reference's free time from its timed batches is their fastest: in
// the full ctest beside a busy loop most of its batches took a time slice,
// the 25th percentile read 6.8 us against ~1 us, the hand-off cost 2.4 us
// instead of 8, and an honest 1 us candidate dripped at 9.5 us was "slow".
TEST(DripCheck, TheReferencesFreeTimeFromTimedBatchesIsItsFastest) {
  const DripFree f = FreeTimes({28.5, 1.0, 30.8, 29.0, 1.1, 28.6}, {0.9, 1.0, 0.96, 1.2, 0.95, 1.1});
  EXPECT_DOUBLE_EQ(f.ref_us, 1.0);
  EXPECT_NEAR(f.cand_us, 0.98, 1e-9);
  EXPECT_EQ(ClassifyDrip(S(9.12, 9.55, false, 6.76), f.ref_us, f.cand_us), DripFinding::kConsistent);
  EXPECT_EQ(FreeTimes({}, {1.0}).ref_us, 0);
}

TEST(DripCheck, ShortDripBatchesAreInconclusive) {
  DripSample s = S(45, 46, false);
  EXPECT_EQ(ClassifyDrip(s, 35, 10), DripFinding::kSlow);
  s.calls = 3;  // the default sizes' batches of 2-3 calls
  EXPECT_EQ(ClassifyDrip(s, 35, 10), DripFinding::kInconclusive);
}

TEST(DripCheck, StarvedOrEmptyIsInconclusive) {
  EXPECT_EQ(ClassifyDrip(S(45, 90, true), 35, 10), DripFinding::kInconclusive);
  EXPECT_EQ(ClassifyDrip(S(0, 90, false), 35, 10), DripFinding::kInconclusive);
  EXPECT_EQ(ClassifyDrip(S(45, 90, false), 35, 0), DripFinding::kInconclusive);
}

TEST(DripCheck, TwoSlowBatchesConvictOneFlags) {
  const DripVerdict once = JudgeDrip({S(45, 46, false), S(45, 20, false), S(45, 21, false)}, 35, 10);
  EXPECT_FALSE(once.cheat);
  EXPECT_TRUE(once.flag);
  const DripVerdict twice = JudgeDrip({S(45, 46, false), S(45, 47, false), S(45, 20, true)}, 35, 10);
  EXPECT_TRUE(twice.cheat);
  EXPECT_EQ(twice.slow, 2);
  EXPECT_EQ(twice.conclusive, 2);
  EXPECT_NE(twice.detail.find("candidate 46.00 us per call, reference 45.00 us (free 35.00) (slow)"),
            std::string::npos)
      << twice.detail;
  // Two of three slow: under 3/4 of the conclusive ones, a flag.
  const DripVerdict two_of_three =
      JudgeDrip({S(45, 46, false), S(45, 47, false), S(45, 20, false)}, 35, 10);
  EXPECT_FALSE(two_of_three.cheat);
  EXPECT_TRUE(two_of_three.flag);
  EXPECT_FALSE(JudgeDrip({}, 35, 10).cheat);
}

}  // namespace
}  // namespace pkforge::kernels
