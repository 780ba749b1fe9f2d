// `pkforge llm check` end to end: the real binary against the agent's
// scripted provider server (OpenAI and Anthropic protocols, errors).
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "agent/testing/fake_http_server.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pkforge::cli {
namespace {

using agent::testing::FakeHttpServer;

struct CmdResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

CmdResult Pkforge(const std::string& args) {
  std::string cmd = std::string(PKFORGE_BIN) + " " + args + " 2>&1";
  CmdResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

constexpr char kKey[] = "sk-llmcheck-5f1e2d3c4b";

class LlmCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = FakeHttpServer::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    setenv("PKF_LLMCHECK_KEY", kKey, 1);  // inherited by the child process
  }
  std::string Args(const std::string& provider, const std::string& extra = "") {
    return "llm check --provider " + provider + " --base-url " + server_->base_url() +
           (provider == "openai" ? "/v1" : "") + " --model gpt-4o --api-key-env PKF_LLMCHECK_KEY " +
           extra;
  }
  std::unique_ptr<FakeHttpServer> server_;
};

TEST_F(LlmCheckTest, OpenAiOk) {
  server_->Enqueue(FakeHttpServer::OpenAiReply("ok", 12, 3));
  CmdResult r = Pkforge(Args("openai"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("ok: openai gpt-4o answered in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("12 prompt + 3 completion tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reply: ok"), std::string::npos) << r.out;
  auto reqs = server_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].target, "/v1/chat/completions");
  EXPECT_EQ(reqs[0].headers["authorization"], std::string("Bearer ") + kKey);
  EXPECT_EQ(r.out.find(kKey), std::string::npos);
}

TEST_F(LlmCheckTest, AnthropicJson) {
  server_->Enqueue(FakeHttpServer::AnthropicReply("ok", 20, 2));
  CmdResult r = Pkforge(Args("anthropic", "--json"));
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_EQ(j["prompt_tokens"], 20);
  EXPECT_EQ(j["completion_tokens"], 2);
  EXPECT_EQ(j["reply"], "ok");
  EXPECT_GT(j["latency_ms"].get<double>(), 0);
  EXPECT_EQ(server_->requests()[0].target, "/v1/messages");
  EXPECT_EQ(server_->requests()[0].headers["x-api-key"], kKey);
}

TEST_F(LlmCheckTest, RejectedKeyIsReportedWithoutEchoingIt) {
  server_->Enqueue(FakeHttpServer::Status(
      401, std::string(R"({"error":{"message":"Incorrect API key provided: )") + kKey + "\"}}"));
  CmdResult r = Pkforge(Args("openai"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("pkforge llm check:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("HTTP 401"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(kKey), std::string::npos) << r.out;
}

TEST_F(LlmCheckTest, MissingKeyVariableAndUnreachableServer) {
  CmdResult r = Pkforge("llm check --provider openai --base-url " + server_->base_url() +
                        " --model m --api-key-env PKF_LLMCHECK_UNSET_VAR");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("PKF_LLMCHECK_UNSET_VAR"), std::string::npos) << r.out;
  EXPECT_EQ(server_->request_count(), 0);

  const std::string url = server_->base_url();
  server_.reset();
  r = Pkforge("llm check --provider openai --base-url " + url + " --model m --timeout 5");
  EXPECT_EQ(r.code, 4) << r.out;
}

TEST_F(LlmCheckTest, UsageErrors) {
  EXPECT_EQ(Pkforge("llm check --provider openai").code, 2);          // no --model
  EXPECT_EQ(Pkforge("llm check --provider bard --model m").code, 2);  // unknown provider
}

}  // namespace
}  // namespace pkforge::cli
