// Runtime::Policy's GPU part (issue 16): the lease's GPUs reach the sandbox
// as SandboxPolicy::gpus (only their device nodes are bound, so inside CUDA
// numbers them 0..n-1), and CUDA_VISIBLE_DEVICES is set to host indices
// only without the sandbox, where nothing hides the other GPUs. And each run's
// CPUs (cpu_lanes.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "executor/config.h"
#include "executor/runtime.h"

namespace pkforge::executor {
namespace {

using ::testing::Contains;

std::vector<std::string> CudaVars(const sandbox::SandboxPolicy& p) {
  std::vector<std::string> out;
  for (const std::string& kv : p.env)
    if (kv.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0 || kv.rfind("CUDA_DEVICE_ORDER=", 0) == 0)
      out.push_back(kv);
  return out;
}

TEST(RuntimePolicyTest, LeasedGpusBecomeTheSandboxsGpusWithoutVisibleDevices) {
  ExecutorConfig config;
  Runtime runtime(config, nullptr);
  sandbox::SandboxPolicy p = runtime.Policy("/tmp/scratch", {2, 5}, 1000);
  EXPECT_TRUE(p.gpu);
  EXPECT_EQ(p.gpus, (std::vector<int>{2, 5}));
  // Inside only GPUs 2 and 5 exist, as CUDA devices 0 and 1: "2,5" would
  // name devices that are not there.
  EXPECT_EQ(CudaVars(p), std::vector<std::string>{"CUDA_DEVICE_ORDER=PCI_BUS_ID"});

  sandbox::SandboxPolicy none = runtime.Policy("/tmp/scratch", {}, 1000);
  EXPECT_FALSE(none.gpu);
  EXPECT_TRUE(none.gpus.empty());
  EXPECT_TRUE(CudaVars(none).empty());
}

TEST(RuntimePolicyTest, WithoutTheSandboxVisibleDevicesSelectsTheLease) {
  ExecutorConfig config;
  config.unsafe_no_sandbox = true;
  Runtime runtime(config, nullptr);
  sandbox::SandboxPolicy p = runtime.Policy("/tmp/scratch", {2, 5}, 1000);
  EXPECT_EQ(p.gpus, (std::vector<int>{2, 5}));
  EXPECT_THAT(CudaVars(p), Contains("CUDA_VISIBLE_DEVICES=2,5"));
  EXPECT_THAT(CudaVars(p), Contains("CUDA_DEVICE_ORDER=PCI_BUS_ID"));
}

// Each run is restricted to its lane's CPUs (cpu_lanes.h): a run on GPU 1
// never gets a CPU of GPU 0's lane, and runs without a GPU get the shared
// lane; before SetCpuLanes (or without GPUs) nothing is restricted.
TEST(RuntimePolicyTest, RunsGetTheirLanesCpus) {
  ExecutorConfig config;
  Runtime runtime(config, nullptr);
  EXPECT_TRUE(runtime.Policy("/tmp/scratch", {1}, 1000).cpus.empty());
  CpuTopology t;
  for (int c = 0; c < 9; ++c) t.cpus.push_back({c, c, 0});
  runtime.SetCpuLanes(CpuLanes(t, {0, 1}));
  EXPECT_EQ(runtime.Policy("/tmp/scratch", {0}, 1000).cpus, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(runtime.Policy("/tmp/scratch", {1}, 1000).cpus, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(runtime.Policy("/tmp/scratch", {0, 1}, 1000).cpus,
            (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(runtime.Policy("/tmp/scratch", {}, 1000).cpus, (std::vector<int>{6, 7, 8}));
}

// Runs of candidate code (the worker, ncu and compute-sanitizer over it) get
// their evaluation's folder read-only and work in the sandbox's private
// tmpfs: a writable host folder had no disk quota (red team round 14
// r14_disk_fill: 3 GiB of host disk in 4 ms through a real executor).
// The executor's runs load CUDA modules lazily, as direct launches do (the
// configuration every GPU test validates); eager loading made evaluations
// through the executor ~5x slower on the H100.
TEST(RuntimePolicyTest, CudaModulesLoadLazilyAsInADirectLaunch) {
  ExecutorConfig config;
  Runtime runtime(config, nullptr);
  const sandbox::SandboxPolicy p = runtime.CandidatePolicy("/tmp/scratch", {0}, 1000);
  EXPECT_THAT(p.env, Contains("CUDA_MODULE_LOADING=LAZY"));
  EXPECT_THAT(p.env, ::testing::Not(Contains("CUDA_MODULE_LOADING=EAGER")));
}

TEST(RuntimePolicyTest, CandidateRunsGetTheirFolderReadOnly) {
  ExecutorConfig config;
  Runtime runtime(config, nullptr);
  const sandbox::SandboxPolicy p = runtime.CandidatePolicy("/tmp/scratch", {}, 1000);
  EXPECT_EQ(p.scratch_dir, "/tmp/scratch");
  EXPECT_TRUE(p.scratch_read_only);
  EXPECT_TRUE(p.cwd.empty());  // the sandbox's /tmp
  EXPECT_GT(p.tmpfs_mb, 0);
  EXPECT_FALSE(runtime.Policy("/tmp/scratch", {}, 1000).scratch_read_only);  // compiles write
}

}  // namespace
}  // namespace pkforge::executor
