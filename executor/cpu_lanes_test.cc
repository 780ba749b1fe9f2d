#include "executor/cpu_lanes.h"

#include <algorithm>
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

// A host without SMT, one node: every CPU its own core.
CpuTopology Flat(const std::vector<int>& cpus) {
  CpuTopology t;
  for (int c : cpus) t.cpus.push_back({c, c, 0});
  return t;
}

// No CPU in two lanes, every allowed CPU in one.
void ExpectPartition(const CpuLanes& lanes, const std::vector<int>& gpus,
                     const std::vector<int>& all) {
  std::set<int> seen;
  for (int g : gpus)
    for (int c : lanes.For({g})) EXPECT_TRUE(seen.insert(c).second) << "CPU " << c << " twice";
  for (int c : lanes.shared()) EXPECT_TRUE(seen.insert(c).second) << "CPU " << c << " twice";
  EXPECT_EQ(std::vector<int>(seen.begin(), seen.end()), all);
}

// 8 GPUs, 64 CPUs: 7 each, contiguous; the shared lane (host evaluations,
// compiles) the other 8; a run on several GPUs gets their lanes together.
TEST(CpuLanes, EveryGpuGetsDisjointCpus) {
  const CpuLanes lanes(Flat(Range(0, 64)), Range(0, 8));
  for (int g = 0; g < 8; ++g) EXPECT_EQ(lanes.For({g}), Range(7 * g, 7 * g + 7)) << "GPU " << g;
  EXPECT_EQ(lanes.shared(), Range(56, 64));
  EXPECT_EQ(lanes.For({}), lanes.shared());
  std::vector<int> two = Range(7, 14);
  for (int c : Range(21, 28)) two.push_back(c);
  EXPECT_EQ(lanes.For({3, 1}), two);
  ExpectPartition(lanes, Range(0, 8), Range(0, 64));
}

// Two sockets of 16 cores with SMT numbered as Linux does on x86 (CPU c and
// c + 32 are siblings; 0-15 and 32-47 on node 0), GPUs 0-1 on node 0 and 2-3
// on node 1: every GPU lane holds whole cores of its own node.
TEST(CpuLanes, WholeCoresOfTheGpusOwnNode) {
  CpuTopology t;
  for (int c = 0; c < 64; ++c) t.cpus.push_back({c, c % 32, (c % 32) < 16 ? 0 : 1});
  t.gpu_node = {{0, 0}, {1, 0}, {2, 1}, {3, 1}};
  const CpuLanes lanes(t, Range(0, 4));
  for (int g = 0; g < 4; ++g) {
    const std::vector<int> cpus = lanes.For({g});
    EXPECT_EQ(cpus.size(), 12u) << "GPU " << g;  // 32 cores / 5 lanes = 6 cores
    for (int c : cpus) {
      EXPECT_EQ((c % 32) < 16 ? 0 : 1, t.gpu_node[g]) << "GPU " << g << " CPU " << c;
      const int sibling = c < 32 ? c + 32 : c - 32;
      EXPECT_NE(std::find(cpus.begin(), cpus.end(), sibling), cpus.end()) << c;
    }
  }
  ExpectPartition(lanes, Range(0, 4), Range(0, 64));
}

// The executor's allowed list as it is (a cpuset with holes), pool indices
// that are not 0..n-1, a GPU whose node is unknown.
TEST(CpuLanes, FollowsTheAllowedListAndPoolIndices) {
  const CpuLanes lanes(Flat({2, 3, 5, 8, 9, 10, 11}), {1, 4});
  EXPECT_EQ(lanes.For({1}), (std::vector<int>{2, 3}));
  EXPECT_EQ(lanes.For({4}), (std::vector<int>{5, 8}));
  EXPECT_EQ(lanes.shared(), (std::vector<int>{9, 10, 11}));
  EXPECT_TRUE(lanes.For({0}).empty());  // not in the pool: no restriction
}

// Nothing to split: no GPU, or fewer cores than lanes.
TEST(CpuLanes, NoPartitionWithoutGpusOrWithTooFewCores) {
  EXPECT_TRUE(CpuLanes(Flat(Range(0, 16)), {}).For({}).empty());
  const CpuLanes few(Flat(Range(0, 2)), Range(0, 4));
  EXPECT_TRUE(few.For({0}).empty());
  EXPECT_TRUE(few.shared().empty());
}

// This host as probed: every allowed CPU once, with its core and node.
TEST(CpuLanes, ProbeListsThisHostsCpus) {
  const CpuTopology t = CpuTopology::Probe({});
  ASSERT_FALSE(t.cpus.empty());
  std::set<int> ids;
  for (const auto& c : t.cpus) {
    EXPECT_TRUE(ids.insert(c.id).second);
    EXPECT_GE(c.node, 0);
    EXPECT_LE(c.core, c.id);  // a core is named by its lowest sibling
  }
}

}  // namespace
}  // namespace pkforge::executor
