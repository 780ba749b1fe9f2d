// LLM clients against a local server speaking each provider's protocol, with
// scripted faults. Backoff waits go through the sleep seam, so Retry-After
// and exponential backoff are checked without waiting for them.
#include "agent/llm_client.h"

#include <stdlib.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "agent/testing/fake_http_server.h"
#include "common/logging.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pkforge::agent {
namespace {

using testing::FakeHttpServer;
using testing::ScriptedResponse;

class LlmClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = FakeHttpServer::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    setenv("PKF_LLM_TEST_KEY", "sk-test-0123456789", 1);
  }

  std::unique_ptr<LlmClient> Client(v1::Provider provider, const std::string& model = "gpt-4o",
                                    int max_attempts = 6, const std::string& client_key = "") {
    v1::LlmConfig c;
    c.set_provider(provider);
    c.set_model(model);
    c.set_base_url(server_->base_url() + (provider == v1::PROVIDER_OPENAI ? "/v1" : ""));
    c.set_api_key_env("PKF_LLM_TEST_KEY");
    c.set_request_timeout_s(request_timeout_s_);
    LlmClientOptions o;
    o.retry.max_attempts = max_attempts;
    o.retry.initial_backoff_ms = 100;
    o.jitter_seed = 42;
    o.api_key = client_key;
    o.sleep = [this](int64_t us, const CancelToken& cancel) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        sleeps_us_.push_back(us);
      }
      return cancel.status();  // recorded, not slept
    };
    auto client = MakeLlmClient(c, o);
    EXPECT_TRUE(client.ok()) << client.status();
    return std::move(*client);
  }

  LlmRequest Request() {
    LlmRequest r;
    r.messages = {{"system", "You write kernels."}, {"user", "Write an allreduce."}};
    r.temperature = 0.3;
    r.max_tokens = 1000;
    return r;
  }

  std::vector<int64_t> sleeps() {
    std::lock_guard<std::mutex> lock(mu_);
    return sleeps_us_;
  }

  std::unique_ptr<FakeHttpServer> server_;
  double request_timeout_s_ = 5;
  std::mutex mu_;
  std::vector<int64_t> sleeps_us_;
};

TEST_F(LlmClientTest, OpenAiRequestReplyUsageAndCost) {
  server_->Enqueue(FakeHttpServer::OpenAiReply("```cuda\nint pkf_run();\n```", 1000, 200));
  auto client = Client(v1::PROVIDER_OPENAI);
  CancelToken token;
  LlmResult r = client->Complete(Request(), token);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.text, "```cuda\nint pkf_run();\n```");
  EXPECT_EQ(r.prompt_tokens, 1000);
  EXPECT_EQ(r.completion_tokens, 200);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_NEAR(r.cost_usd, (1000 * 2.5 + 200 * 10.0) / 1e6, 1e-12);
  EXPECT_GT(r.latency_ms, 0);
  auto reqs = server_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].target, "/v1/chat/completions");
  EXPECT_EQ(reqs[0].headers["authorization"], "Bearer sk-test-0123456789");
  auto body = nlohmann::json::parse(reqs[0].body);
  EXPECT_EQ(body["model"], "gpt-4o");
  EXPECT_EQ(body["max_tokens"], 1000);
  EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.3);
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["content"], "Write an allreduce.");
}

TEST_F(LlmClientTest, AnthropicMessagesProtocol) {
  server_->Enqueue(FakeHttpServer::AnthropicReply("hello from claude", 300, 40));
  auto client = Client(v1::PROVIDER_ANTHROPIC, "claude-sonnet-4-20250514");
  CancelToken token;
  LlmResult r = client->Complete(Request(), token);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.text, "hello from claude");
  EXPECT_EQ(r.prompt_tokens, 300);
  EXPECT_EQ(r.completion_tokens, 40);
  EXPECT_EQ(r.finish_reason, "end_turn");
  EXPECT_NEAR(r.cost_usd, (300 * 3.0 + 40 * 15.0) / 1e6, 1e-12);  // prefix "claude-sonnet-4"
  auto reqs = server_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].target, "/v1/messages");
  EXPECT_EQ(reqs[0].headers["x-api-key"], "sk-test-0123456789");
  EXPECT_EQ(reqs[0].headers["anthropic-version"], "2023-06-01");
  EXPECT_EQ(reqs[0].headers.count("authorization"), 0u);
  auto body = nlohmann::json::parse(reqs[0].body);
  EXPECT_EQ(body["system"], "You write kernels.");
  ASSERT_EQ(body["messages"].size(), 1u);  // the system message moved out
  EXPECT_EQ(body["messages"][0]["content"][0]["type"], "text");
  EXPECT_EQ(body["messages"][0]["content"][0]["text"], "Write an allreduce.");
  EXPECT_EQ(body["max_tokens"], 1000);
}

TEST_F(LlmClientTest, RetriesHonourRetryAfterThenSucceed) {
  server_->Enqueue(FakeHttpServer::Status(429, R"({"error":{"message":"rate limited"}})",
                                          {{"Retry-After", "7"}}));
  server_->Enqueue(FakeHttpServer::OpenAiReply("ok"));
  auto client = Client(v1::PROVIDER_OPENAI);
  CancelToken token;
  LlmResult r = client->Complete(Request(), token);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.attempts, 2);
  ASSERT_EQ(sleeps().size(), 1u);
  EXPECT_GE(sleeps()[0], 7'000'000);  // at least what the server asked for
  EXPECT_NE(r.note.find("rate limited"), std::string::npos) << r.note;
}

TEST_F(LlmClientTest, EveryTransientFaultIsRetriedWithGrowingBackoff) {
  request_timeout_s_ = 0.3;
  server_->Enqueue(FakeHttpServer::Status(500, R"({"error":{"message":"internal"}})"));
  ScriptedResponse reset;
  reset.action = ScriptedResponse::Action::kReset;
  server_->Enqueue(reset);
  ScriptedResponse truncated = FakeHttpServer::OpenAiReply("this reply is cut in the middle");
  truncated.action = ScriptedResponse::Action::kDropMidBody;
  server_->Enqueue(truncated);
  server_->Enqueue(
      FakeHttpServer::Status(200, "{\"choices\": [ {\"message\": "));  // malformed JSON
  ScriptedResponse never;
  never.action = ScriptedResponse::Action::kNeverAnswer;  // attempt timeout
  server_->Enqueue(never);
  server_->Enqueue(FakeHttpServer::OpenAiReply("finally"));
  auto client = Client(v1::PROVIDER_OPENAI);
  CancelToken token;
  LlmResult r = client->Complete(Request(), token);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.text, "finally");
  EXPECT_EQ(r.attempts, 6);
  auto s = sleeps();
  ASSERT_EQ(s.size(), 5u);
  for (size_t i = 0; i < s.size(); ++i) {
    const double base_us = 100'000.0 * (1 << i);  // 100 ms doubling
    EXPECT_GE(s[i], 0.5 * base_us - 1) << i;      // equal jitter: [b/2, b]
    EXPECT_LE(s[i], base_us + 1) << i;
  }
}

TEST_F(LlmClientTest, GivesUpAfterMaxAttempts) {
  server_->SetDefault([](const testing::RecordedRequest&) {
    return FakeHttpServer::Status(503, R"({"error":{"message":"overloaded"}})");
  });
  auto client = Client(v1::PROVIDER_OPENAI, "gpt-4o", 3);
  CancelToken token;
  LlmResult r = client->Complete(Request(), token);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kUnavailable) << r.status;
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(server_->request_count(), 3);
  EXPECT_NE(r.status.message().find("overloaded"), absl::string_view::npos);
  EXPECT_NE(r.status.message().find("attempt 3 of 3"), absl::string_view::npos) << r.status;
  EXPECT_FALSE(IsPermanentLlmError(r.status));
}

TEST_F(LlmClientTest, PermanentErrorsAreNotRetriedAndNeverEchoTheKey) {
  // Providers echo (parts of) a bad key in their error; it must not survive.
  server_->Enqueue(FakeHttpServer::Status(
      401, R"({"error":{"message":"Incorrect API key provided: sk-test-0123456789"}})"));
  auto client = Client(v1::PROVIDER_OPENAI);
  CancelToken token;
  LlmResult r = client->Complete(Request(), token);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kUnauthenticated) << r.status;
  EXPECT_EQ(r.attempts, 1);
  EXPECT_TRUE(IsPermanentLlmError(r.status));
  EXPECT_EQ(r.status.message().find("sk-test-0123456789"), absl::string_view::npos) << r.status;
  EXPECT_NE(r.status.message().find("***"), absl::string_view::npos) << r.status;
}

TEST_F(LlmClientTest, RetriesAreBoundedByTheJobBudget) {
  server_->Enqueue(FakeHttpServer::Status(429, "{}", {{"Retry-After", "30"}}));
  auto client = Client(v1::PROVIDER_OPENAI);
  CancelToken token;
  token.SetDeadline(SystemClock::Get()->NowMonotonicMicros() + 2'000'000);
  LlmResult r = client->Complete(Request(), token);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kResourceExhausted) << r.status;
  EXPECT_NE(r.status.message().find("no budget left to retry"), absl::string_view::npos);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_TRUE(sleeps().empty());
}

TEST_F(LlmClientTest, MissingKeyVariableFailsWithoutCalling) {
  unsetenv("PKF_LLM_TEST_KEY");
  auto client = Client(v1::PROVIDER_OPENAI);
  CancelToken token;
  LlmResult r = client->Complete(Request(), token);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kFailedPrecondition);
  // The message can reach an API client: it must not say which variable
  // the operator uses (nor, by varying it, which variables exist).
  EXPECT_EQ(r.status.message().find("PKF_LLM_TEST_KEY"), absl::string_view::npos) << r.status;
  EXPECT_EQ(server_->request_count(), 0);
}

// A client's own key (allowed per provider by the operator) replaces the
// operator's variable and is redacted from everything the provider echoes,
// without being registered process-wide.
TEST_F(LlmClientTest, ClientKeyReplacesTheVariableAndIsRedacted) {
  const std::string key = "sk-client-own-key-987654321";
  server_->Enqueue(FakeHttpServer::Status(
      401, R"({"error":{"type":"auth","message":"bad key sk-client-own-key-987654321"}})"));
  auto client = Client(v1::PROVIDER_OPENAI, "gpt-4o", 1, key);
  CancelToken token;
  LlmResult r = client->Complete(Request(), token);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(std::string(r.status.message()).find(key), std::string::npos) << r.status;
  EXPECT_NE(std::string(r.status.message()).find("***"), std::string::npos) << r.status;
  auto reqs = server_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].headers["authorization"], "Bearer " + key);
  EXPECT_EQ(RedactSecrets(key), key);  // not in the process-wide list
}

TEST_F(LlmClientTest, UnknownModelCostsZeroWithNote) {
  server_->Enqueue(FakeHttpServer::OpenAiReply("ok", 10, 10));
  auto client = Client(v1::PROVIDER_OPENAI, "my-local-llama");
  CancelToken token;
  LlmResult r = client->Complete(Request(), token);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.cost_usd, 0);
  EXPECT_NE(r.note.find("no price for model my-local-llama"), std::string::npos);
}

TEST_F(LlmClientTest, CancellationInterruptsTheCall) {
  ScriptedResponse never;
  never.action = ScriptedResponse::Action::kNeverAnswer;
  server_->Enqueue(never);
  request_timeout_s_ = 60;
  auto client = Client(v1::PROVIDER_OPENAI);
  CancelToken token;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    token.Cancel(absl::CancelledError("job cancelled"));
  });
  const auto start = std::chrono::steady_clock::now();
  LlmResult r = client->Complete(Request(), token);
  canceller.join();
  EXPECT_EQ(r.status.code(), absl::StatusCode::kCancelled);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}

TEST(LlmConfig, ValidationAndDefaults) {
  v1::LlmConfig c;
  EXPECT_FALSE(MakeLlmClient(c, {}).ok());  // no provider
  c.set_provider(v1::PROVIDER_OPENAI);
  EXPECT_FALSE(MakeLlmClient(c, {}).ok());  // no model
  c.set_model("gpt-4o");
  c.set_base_url("ftp://example.com");
  EXPECT_FALSE(MakeLlmClient(c, {}).ok());
  c.set_base_url("");
  EXPECT_TRUE(MakeLlmClient(c, {}).ok());  // https://api.openai.com/v1
}

TEST(PriceTable, ExactThenLongestPrefix) {
  PriceTable t;
  EXPECT_DOUBLE_EQ(t.Lookup("gpt-4o")->input_per_mtok, 2.5);
  EXPECT_DOUBLE_EQ(t.Lookup("gpt-4o-mini-2024-07-18")->input_per_mtok, 0.15);
  EXPECT_DOUBLE_EQ(t.Lookup("o3-mini")->output_per_mtok, 4.4);
  EXPECT_FALSE(t.Lookup("llama-3-70b").has_value());
  t.prices["llama-3"] = {0.5, 0.5};
  EXPECT_DOUBLE_EQ(t.Lookup("llama-3-70b")->input_per_mtok, 0.5);
}

TEST(Wire, ParsesContentPartsAndRejectsMalformed) {
  auto r = wire::ParseOpenAiReply(
      R"({"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->text, "ab");
  EXPECT_FALSE(wire::ParseOpenAiReply(R"({"choices":[]})").ok());
  EXPECT_FALSE(wire::ParseOpenAiReply("not json").ok());
  EXPECT_FALSE(wire::ParseAnthropicReply(R"({"type":"error","error":{"message":"x"}})").ok());
  EXPECT_EQ(wire::ErrorMessage(
                R"({"type":"error","error":{"type":"overloaded_error","message":"busy"}})"),
            "overloaded_error: busy");
  // Reasoning models get max_completion_tokens and no temperature.
  LlmRequest req;
  req.messages = {{"user", "hi"}};
  auto body = nlohmann::json::parse(wire::OpenAiBody("o3", req));
  EXPECT_TRUE(body.contains("max_completion_tokens"));
  EXPECT_FALSE(body.contains("temperature"));
}

}  // namespace
}  // namespace pkforge::agent
