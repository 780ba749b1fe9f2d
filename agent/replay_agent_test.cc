#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/agent.h"
#include "agent/testing/fake_evaluator.h"
#include "agent/testing/recording_sink.h"
#include "common/ids.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace pkforge::agent {
namespace {

namespace fs = std::filesystem;
using testing::FakeEvaluator;
using testing::RecordingSink;

class ReplayAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("pkf_replay_{}", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const char* name : {"b_second.cu", "c_third.cu", "a_first.cu", ".hidden.cu"}) {
      std::ofstream(dir_ / name) << "// " << name << "\nextern \"C\" int pkf_run();\n";
    }
    fs::create_directories(dir_ / "subdir");  // not a file: ignored
  }
  void TearDown() override { fs::remove_all(dir_); }

  absl::StatusOr<AgentResult> Run(int max_evaluations = 0, std::string dir = "",
                                  std::string root = "-") {
    AgentEnv env;
    env.job_id = NewId("job");
    env.spec.set_problem("allreduce");
    env.spec.set_backend(v1::BACKEND_HOST);
    env.spec.set_world_size(2);
    env.spec.mutable_agent()->set_kind(v1::AGENT_KIND_REPLAY);
    env.spec.mutable_agent()->set_replay_dir(dir.empty() ? dir_.string() : dir);
    env.spec.mutable_budget()->set_wall_seconds(30);
    env.spec.mutable_budget()->set_max_evaluations(max_evaluations);
    env.evaluator = &eval_;
    env.sink = &sink_;
    AgentOptions options;
    // Default: the test directory's parent is the operator's replay root.
    options.replay_root = root == "-" ? dir_.parent_path().string() : root;
    auto agent = MakeAgent(env, options);
    if (!agent.ok()) return agent.status();
    return (*agent)->Run();
  }

  fs::path dir_;
  FakeEvaluator eval_;
  RecordingSink sink_;
};

TEST_F(ReplayAgentTest, EvaluatesFilesInSortedOrder) {
  auto r = Run();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop_reason, "nothing left to try");
  EXPECT_EQ(r->evaluations, 3);
  EXPECT_EQ(r->turns, 3);
  auto reqs = eval_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].source().rfind("// a_first.cu", 0), 0u);
  EXPECT_EQ(reqs[1].source().rfind("// b_second.cu", 0), 0u);
  EXPECT_EQ(reqs[2].source().rfind("// c_third.cu", 0), 0u);
  auto cands = sink_.candidates();
  ASSERT_EQ(cands.size(), 3u);
  EXPECT_EQ(cands[0].origin, "replay:a_first.cu");
  EXPECT_EQ(cands[0].backend, "host");
  EXPECT_EQ(sink_.turns()[2].note, "replay c_third.cu");
}

TEST_F(ReplayAgentTest, StopsAtTheEvaluationBudget) {
  auto r = Run(2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop_reason, "max evaluations");
  EXPECT_EQ(eval_.calls(), 2);
}

TEST_F(ReplayAgentTest, MissingDirectoryIsNotFound) {
  auto r = Run(0, (dir_ / "nope").string());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
}

// Issue #15 item 3: the run-time checks hold on their own (a job resumed
// after a restart with another root, a link swapped in after admission).
TEST_F(ReplayAgentTest, DirectoryOutsideTheRootOrThroughALinkIsRefused) {
  const fs::path root = dir_ / "root";
  const fs::path outside = dir_ / "outside";
  fs::create_directories(root / "ok");
  fs::create_directories(outside);
  std::ofstream(outside / "secret.cc") << "// HOST-SECRET\n";
  std::ofstream(root / "ok" / "a.cc") << "// fine\n";
  fs::create_directory_symlink(outside, root / "escape");
  fs::create_symlink(outside / "secret.cc", root / "ok" / "link.cc");
  const std::string r = root.string();
  for (const std::string& d : {outside.string(), std::string("../outside"), r + "/../outside",
                               std::string("escape"), r + "/escape", std::string("ok/../../outside"),
                               std::string("/etc")}) {
    auto res = Run(0, d, r);
    ASSERT_FALSE(res.ok()) << d;
    EXPECT_EQ(res.status().code(), absl::StatusCode::kPermissionDenied) << d << ": " << res.status();
  }
  EXPECT_EQ(eval_.calls(), 0);
  // No root configured: any directory is refused, even an existing one.
  auto none = Run(0, (root / "ok").string(), "");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kPermissionDenied) << none.status();
  // Inside the root: the regular file runs, the link to the secret is not read.
  auto ok = Run(0, "ok", r);
  ASSERT_TRUE(ok.ok()) << ok.status();
  ASSERT_EQ(eval_.requests().size(), 1u);
  EXPECT_EQ(eval_.requests()[0].source(), "// fine\n");
}

TEST_F(ReplayAgentTest, InlineSourcesRunInOrderWithoutAnyRoot) {
  AgentEnv env;
  env.job_id = NewId("job");
  env.spec.set_problem("allreduce");
  env.spec.set_backend(v1::BACKEND_HOST);
  env.spec.set_world_size(2);
  env.spec.mutable_agent()->set_kind(v1::AGENT_KIND_REPLAY);
  for (const char* name : {"z.cc", "a.cc"}) {
    auto* src = env.spec.mutable_agent()->add_replay_sources();
    src->set_name(name);
    src->set_source(std::string("// inline ") + name + "\n");
  }
  env.spec.mutable_budget()->set_wall_seconds(30);
  env.evaluator = &eval_;
  env.sink = &sink_;
  auto agent = MakeAgent(env, AgentOptions{});
  ASSERT_TRUE(agent.ok()) << agent.status();
  auto r = (*agent)->Run();
  ASSERT_TRUE(r.ok()) << r.status();
  auto reqs = eval_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].source(), "// inline z.cc\n");  // request order, not sorted
  EXPECT_EQ(reqs[1].source(), "// inline a.cc\n");
  EXPECT_EQ(sink_.candidates()[0].origin, "replay:z.cc");
}

}  // namespace
}  // namespace pkforge::agent
