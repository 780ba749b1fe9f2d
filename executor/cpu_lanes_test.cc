#include "executor/cpu_lanes.h"

#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace pkforge::executor {
namespace {

std::vector<int> Range(int from, int to) {
  std::vector<int> v;
  for (int c = from; c < to; ++c) v.push_back(c);
  return v;
}

// An 8-GPU host with 64 CPUs: each GPU's evaluation gets 7 CPUs of its own,
// contiguous, and the shared lane (host evaluations, compiles) the other 8;
// no CPU is in two lanes.
TEST(CpuLanes, EveryGpuGetsDisjointContiguousCpus) {
  const CpuLanes lanes(Range(0, 64), Range(0, 8));
  std::set<int> seen;
  for (int g = 0; g < 8; ++g) {
    const std::vector<int> cpus = lanes.For({g});
    EXPECT_EQ(cpus, Range(7 * g, 7 * g + 7)) << "GPU " << g;
    for (int c : cpus) EXPECT_TRUE(seen.insert(c).second) << "CPU " << c << " in two lanes";
  }
  EXPECT_EQ(lanes.shared(), Range(56, 64));
  EXPECT_EQ(lanes.For({}), lanes.shared());
  // A run on several GPUs gets their lanes together.
  std::vector<int> two = Range(7, 14);
  for (int c : Range(21, 28)) two.push_back(c);
  EXPECT_EQ(lanes.For({3, 1}), two);
}

// The executor's own CPU list as it is (a cpuset with holes), GPU indices
// that are not 0..n-1 (a pool without a retired GPU).
TEST(CpuLanes, FollowsTheAllowedListAndPoolIndices) {
  const CpuLanes lanes({2, 3, 5, 8, 9, 10, 11}, {1, 4});
  EXPECT_EQ(lanes.For({1}), (std::vector<int>{2, 3}));
  EXPECT_EQ(lanes.For({4}), (std::vector<int>{5, 8}));
  EXPECT_EQ(lanes.shared(), (std::vector<int>{9, 10, 11}));
  EXPECT_TRUE(lanes.For({0}).empty());  // not in the pool: no restriction
}

// Nothing to split: no GPU (every run may use every CPU), or fewer CPUs
// than lanes.
TEST(CpuLanes, NoPartitionWithoutGpusOrWithTooFewCpus) {
  EXPECT_TRUE(CpuLanes(Range(0, 16), {}).For({}).empty());
  const CpuLanes few(Range(0, 2), Range(0, 4));
  EXPECT_TRUE(few.For({0}).empty());
  EXPECT_TRUE(few.shared().empty());
  EXPECT_FALSE(CpuLanes::Allowed().empty());
}

}  // namespace
}  // namespace pkforge::executor
