#include "kernels/harness/drip_check.h"

#include "gtest/gtest.h"

namespace pkforge::kernels {
namespace {

// Free-running per call: reference 35 us. Hand-offs cost the reference 10 us.
TEST(DripCheck, HonestCandidatesAreConsistentAtAnySpeed) {
  // As fast as the reference, the same hand-off cost.
  EXPECT_EQ(ClassifyDrip({45, 46, false}, 35, 35), DripFinding::kConsistent);
  // Honestly 3.5x faster: 10 us free, 20 us dripped.
  EXPECT_EQ(ClassifyDrip({45, 20, false}, 35, 10), DripFinding::kConsistent);
  // Honestly slower.
  EXPECT_EQ(ClassifyDrip({45, 110, false}, 35, 100), DripFinding::kConsistent);
  // A 1 us call with hand-offs a few us dearer than the reference's (another
  // process watches it): within the noise allowance.
  EXPECT_EQ(ClassifyDrip({45, 15, false}, 35, 1), DripFinding::kConsistent);
}

TEST(DripCheck, AmortizationShowsAsSlowDripCalls) {
  // Red team lookahead_private_k4: 10 us per call free-running (3.5x), but a
  // call alone costs what the reference's does.
  EXPECT_EQ(ClassifyDrip({45, 46, false}, 35, 10), DripFinding::kSlow);
  // A 2x gain is at the limit; beyond it, slow.
  EXPECT_EQ(ClassifyDrip({45, 45, false}, 35, 17.5), DripFinding::kConsistent);
  EXPECT_EQ(ClassifyDrip({45, 45, false}, 35, 15), DripFinding::kSlow);
}

TEST(DripCheck, StarvedOrEmptyIsInconclusive) {
  EXPECT_EQ(ClassifyDrip({45, 90, true}, 35, 10), DripFinding::kInconclusive);
  EXPECT_EQ(ClassifyDrip({0, 90, false}, 35, 10), DripFinding::kInconclusive);
  EXPECT_EQ(ClassifyDrip({45, 90, false}, 35, 0), DripFinding::kInconclusive);
}

TEST(DripCheck, TwoSlowBatchesConvictOneFlags) {
  const DripVerdict once = JudgeDrip({{45, 46, false}, {45, 20, false}, {45, 21, false}}, 35, 10);
  EXPECT_FALSE(once.cheat);
  EXPECT_TRUE(once.flag);
  const DripVerdict twice = JudgeDrip({{45, 46, false}, {45, 47, false}, {45, 20, true}}, 35, 10);
  EXPECT_TRUE(twice.cheat);
  EXPECT_EQ(twice.slow, 2);
  EXPECT_EQ(twice.conclusive, 2);
  EXPECT_NE(twice.detail.find("candidate 46.00 us per call, reference 45.00 us (slow)"),
            std::string::npos)
      << twice.detail;
  // Two of three slow: under 3/4 of the conclusive ones, a flag.
  const DripVerdict two_of_three =
      JudgeDrip({{45, 46, false}, {45, 47, false}, {45, 20, false}}, 35, 10);
  EXPECT_FALSE(two_of_three.cheat);
  EXPECT_TRUE(two_of_three.flag);
  EXPECT_FALSE(JudgeDrip({}, 35, 10).cheat);
}

}  // namespace
}  // namespace pkforge::kernels
