#include <cmath>

#include "gtest/gtest.h"
#include "kernels/harness/stats.h"

namespace pkforge::kernels {
namespace {

TEST(Stats, QuantilesAndCv) {
  TimingStats_ s = ComputeStats({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_NEAR(s.p10, 1.4, 1e-12);
  EXPECT_NEAR(s.p90, 4.6, 1e-12);
  EXPECT_NEAR(s.cv, std::sqrt(2.0) / 3, 1e-12);
  EXPECT_EQ(s.samples, 5);
  EXPECT_EQ(ComputeStats({}).samples, 0);
}

}  // namespace
}  // namespace pkforge::kernels
