// `pkforge local` with the llm and replay agents (issue 15, items 2 and 3):
// the local user is the operator, so its --provider/--base-url/--model/
// --api-key-env flags become the orchestrator child's one provider and
// --replay-dir its replay root. Real daemons, the host backend, and the
// agent module's scripted HTTP server as the provider.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "agent/testing/fake_http_server.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pkforge::cli {
namespace {

namespace fs = std::filesystem;
using agent::testing::FakeHttpServer;
using agent::testing::RecordedRequest;

constexpr char kKeyEnv[] = "PKF_LOCAL_AGENTS_TEST_KEY";
constexpr char kKey[] = "sk-local-operator-key-24680";

// Runs `pkforge <args>` with stdout (the --json result) parsed; stderr dropped.
nlohmann::json RunJson(const std::string& args, int* rc) {
  const std::string cmd = std::string(PKFORGE_BIN) + " " + args + " --json 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p != nullptr && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = p != nullptr ? pclose(p) : -1;
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const size_t at = out.rfind("\n{\"job\"");
  try {
    return nlohmann::json::parse(at == std::string::npos ? out : out.substr(at + 1));
  } catch (const nlohmann::json::exception&) {
    return nlohmann::json{{"unparsed", out}};
  }
}

class LocalAgentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pkf_local_agents." + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(LocalAgentsTest, LlmFlagsConfigureTheOrchestratorsProvider) {
  auto server = FakeHttpServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->SetDefault([](const RecordedRequest&) {
    // Not a working kernel: the job records a failed evaluation and stops at
    // its evaluation budget, which is all this test needs.
    return FakeHttpServer::OpenAiReply("```cpp\nint pkf_run();\n```\n");
  });
  setenv(kKeyEnv, kKey, 1);
  int rc = -1;
  auto j = RunJson("local --backend host --problem allreduce --world-size 2 --size tiny "
                   "--agent llm --provider openai --base-url " + (*server)->base_url() +
                       "/v1 --model gpt-4o --api-key-env " + kKeyEnv +
                       " --budget 120s --max-evaluations 1 --data-dir " + (dir_ / "llm").string(),
                   &rc);
  ASSERT_TRUE(j.contains("job")) << j.dump();
  EXPECT_EQ(j["job"]["state"], "JOB_STATE_SUCCEEDED") << j.dump();
  auto reqs = (*server)->requests();
  ASSERT_FALSE(reqs.empty());
  EXPECT_EQ(reqs[0].target, "/v1/chat/completions");
  EXPECT_EQ(reqs[0].headers["authorization"], std::string("Bearer ") + kKey);
}

TEST_F(LocalAgentsTest, ReplayDirBecomesTheOrchestratorsReplayRoot) {
  const fs::path cands = dir_ / "cands";
  fs::create_directories(cands);
  std::ofstream(cands / "a.cc") << "// not a kernel a\n";
  std::ofstream(cands / "b.cc") << "// not a kernel b\n";
  int rc = -1;
  auto j = RunJson("local --backend host --problem allreduce --world-size 2 --size tiny "
                   "--agent replay --replay-dir " + cands.string() +
                       " --budget 120s --data-dir " + (dir_ / "replay").string(),
                   &rc);
  ASSERT_TRUE(j.contains("job")) << j.dump();
  EXPECT_EQ(j["job"]["state"], "JOB_STATE_SUCCEEDED") << j.dump();
  EXPECT_EQ(j["job"]["evaluations"], 2) << j.dump();
}

}  // namespace
}  // namespace pkforge::cli
