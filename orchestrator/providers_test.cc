// Operator-chosen LLM providers (issue 15, item 2) beyond the basics in
// orchestrator_test.cc: a provider of each protocol by name end to end, the
// operator's per-provider model list, client keys only where the operator
// allows them (never stored, never echoed), and the --provider/config-file
// syntax. A real orchestrator over gRPC on a socket, a fake executor, and the
// agent module's scripted HTTP server speaking the provider protocol.
#include <sqlite3.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "agent/testing/fake_http_server.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/config.h"
#include "orchestrator/convert.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/testing/fake_executor.h"
#include "orchestrator/testing/test_util.h"

namespace pkforge::orchestrator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using agent::testing::FakeHttpServer;
using agent::testing::RecordedRequest;
using testing::FakeExecutor;

constexpr char kKeyEnv[] = "PKF_PROVIDERS_TEST_KEY";
constexpr char kOperatorKey[] = "sk-operator-canary-5551234567";
constexpr char kClientKey[] = "sk-client-canary-7778889990";

std::string Reply(int variant) {
  return fmt::format(
      "Improved.\n```cuda\n#include \"pkforge/candidate.h\"\n// variant {}\n"
      "extern \"C\" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in,\n"
      "                        pkf_tensor* out, int32_t n_out, void* stream) {{\n"
      "  return 0;\n}}\n```\n",
      variant);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class ProvidersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("orch_providers");
    ASSERT_FALSE(dir_.empty());
    setenv(kKeyEnv, kOperatorKey, 1);
    auto f = FakeExecutor::Start({});
    ASSERT_TRUE(f.ok()) << f.status();
    executor_ = std::move(*f);
    auto s = FakeHttpServer::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
  }
  void TearDown() override {
    orch_.reset();
    executor_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Start(std::vector<LlmProvider> providers) {
    OrchestratorConfig c;
    c.listen = "127.0.0.1:0";
    c.db = db();
    c.executors.push_back(ExecutorEndpoint{.address = executor_->address()});
    c.heartbeat_interval_s = 0.2;
    c.health_interval_s = 0.3;
    c.llm_initial_backoff_ms = 1;
    c.llm_max_backoff_ms = 5;
    c.providers = std::move(providers);
    auto o = Orchestrator::Start(c);
    ASSERT_TRUE(o.ok()) << o.status();
    orch_ = std::move(*o);
    stub_ = testing::Client(orch_->address());
  }

  absl::StatusOr<v1::Job> Submit(const v1::JobSpec& spec) {
    grpc::ClientContext ctx;
    v1::SubmitJobRequest req;
    *req.mutable_spec() = spec;
    v1::Job job;
    grpc::Status s = stub_->SubmitJob(&ctx, req, &job);
    if (!s.ok()) return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
    return job;
  }

  // Every byte the orchestrator has persisted so far.
  std::string StoredBytes() { return ReadAll(db()) + ReadAll(db() + "-wal"); }

  std::string db() const { return dir_ + "/traj.db"; }

  std::string dir_;
  std::unique_ptr<FakeExecutor> executor_;
  std::unique_ptr<FakeHttpServer> server_;
  std::unique_ptr<Orchestrator> orch_;
  std::unique_ptr<v1::Orchestrator::Stub> stub_;
};

TEST_F(ProvidersTest, AnAnthropicProviderByNameWorksEndToEnd) {
  std::atomic<int> n{0};
  server_->SetDefault([&](const RecordedRequest&) { return FakeHttpServer::AnthropicReply(Reply(++n)); });
  Start({LlmProvider{.name = "claude",
                     .kind = "anthropic",
                     .base_url = server_->base_url(),
                     .key_env = kKeyEnv}});
  v1::JobSpec spec = testing::LlmSpec("claude", 2);
  spec.mutable_agent()->mutable_llm()->clear_provider();  // the provider's kind is used
  spec.mutable_agent()->mutable_llm()->set_model("claude-sonnet-4");
  auto job = Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 30);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->error();
  EXPECT_EQ(done->turns(), 2);
  EXPECT_EQ(done->evaluations(), 2);
  auto reqs = server_->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].target, "/v1/messages");
  EXPECT_EQ(reqs[0].headers["x-api-key"], kOperatorKey);
  EXPECT_FALSE(reqs[0].headers["anthropic-version"].empty());
  EXPECT_THAT(reqs[0].body, HasSubstr("\"claude-sonnet-4\""));
  EXPECT_EQ(StoredBytes().find(kOperatorKey), std::string::npos);
}

TEST_F(ProvidersTest, ModelsOutsideTheOperatorsListAreRefused) {
  server_->SetDefault([](const RecordedRequest&) { return FakeHttpServer::OpenAiReply(Reply(1)); });
  Start({LlmProvider{.name = "cheap",
                     .kind = "openai",
                     .base_url = server_->base_url() + "/v1",
                     .key_env = kKeyEnv,
                     .models = {"gpt-4o-mini"}}});
  v1::JobSpec spec = testing::LlmSpec("cheap", 1);
  spec.mutable_agent()->mutable_llm()->set_model("gpt-5");
  auto refused = Submit(spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("spec.agent.llm.model"));
  spec.mutable_agent()->mutable_llm()->set_model("gpt-4o-mini");
  auto job = Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 30);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->error();
  EXPECT_EQ(server_->request_count(), 1);
}

// A client key goes only to a provider whose operator allowed client keys,
// is used for that job's calls, and is in no reply, listing or stored byte.
TEST_F(ProvidersTest, ClientKeysOnlyWhereAllowedAndNeverStoredNorEchoed) {
  std::atomic<int> n{0};
  server_->SetDefault([&](const RecordedRequest&) { return FakeHttpServer::OpenAiReply(Reply(++n)); });
  Start({LlmProvider{.name = "operator-only",
                     .kind = "openai",
                     .base_url = server_->base_url() + "/v1",
                     .key_env = kKeyEnv},
         LlmProvider{.name = "byok",
                     .kind = "openai",
                     .base_url = server_->base_url() + "/v1",
                     .allow_client_key = true}});
  // Not allowed: refused before any call, naming the field, not quoting the key.
  v1::JobSpec denied = testing::LlmSpec("operator-only", 1);
  denied.mutable_agent()->mutable_llm()->set_api_key(kClientKey);
  auto r = Submit(denied);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("spec.agent.llm.api_key"));
  EXPECT_THAT(std::string(r.status().message()), Not(HasSubstr(kClientKey)));
  // A key that would add HTTP header lines.
  v1::JobSpec injected = testing::LlmSpec("byok", 1);
  injected.mutable_agent()->mutable_llm()->set_api_key("abcd\r\nX-Evil: 1");
  r = Submit(injected);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("spec.agent.llm.api_key"));
  EXPECT_EQ(server_->request_count(), 0);

  // Allowed: the key reaches the provider, and nothing shows it.
  v1::JobSpec spec = testing::LlmSpec("byok", 2);
  spec.mutable_agent()->mutable_llm()->set_api_key(kClientKey);
  auto job = Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec().agent().llm().api_key(), "");
  EXPECT_EQ(job->SerializeAsString().find(kClientKey), std::string::npos);
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 30);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->error();
  EXPECT_EQ(done->SerializeAsString().find(kClientKey), std::string::npos);
  auto reqs = server_->requests();
  ASSERT_EQ(reqs.size(), 2u);
  for (const auto& req : reqs) EXPECT_EQ(req.headers.at("authorization"), std::string("Bearer ") + kClientKey);
  {
    grpc::ClientContext ctx;
    v1::ListJobsResponse list;
    ASSERT_TRUE(stub_->ListJobs(&ctx, v1::ListJobsRequest(), &list).ok());
    EXPECT_EQ(list.SerializeAsString().find(kClientKey), std::string::npos);
  }
  {
    grpc::ClientContext ctx;
    v1::GetTrajectoryRequest req;
    req.set_job_id(job->id());
    req.set_include_llm_text(true);
    v1::Trajectory traj;
    ASSERT_TRUE(stub_->GetTrajectory(&ctx, req, &traj).ok());
    EXPECT_EQ(traj.SerializeAsString().find(kClientKey), std::string::npos);
  }
  orch_.reset();  // flush and close the database
  EXPECT_EQ(StoredBytes().find(kClientKey), std::string::npos);
}

// Second line of defence behind Admit(): the storage row never holds a key.
TEST(ProviderConfigTest, NewJobRecordNeverStoresAClientKey) {
  v1::JobSpec spec = testing::LlmSpec("byok", 1);
  spec.mutable_agent()->mutable_llm()->set_api_key(kClientKey);
  auto r = NewJobRecord("job_01ARZ3NDEKTSV4RRFFQ69G5FAV", spec, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->spec_json.find(kClientKey), std::string::npos) << r->spec_json;
  EXPECT_NE(r->spec_json.find("byok"), std::string::npos) << r->spec_json;
}

TEST(ProviderConfigTest, FlagAndFileSyntax) {
  auto p = ParseProvider("name=c,kind=anthropic,base_url=https://x.example,key_env=K,"
                         "models=m1|m2,allow_client_key=true");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "c");
  EXPECT_EQ(p->kind, "anthropic");
  EXPECT_EQ(p->base_url, "https://x.example");
  EXPECT_EQ(p->key_env, "K");
  EXPECT_EQ(p->models, (std::vector<std::string>{"m1", "m2"}));
  EXPECT_TRUE(p->allow_client_key);
  auto positional = ParseProvider("local=openai,http://127.0.0.1:8000/v1,");
  ASSERT_TRUE(positional.ok()) << positional.status();
  EXPECT_EQ(positional->name, "local");
  EXPECT_EQ(positional->key_env, "");
  EXPECT_FALSE(positional->allow_client_key);
  auto bad = ParseProvider("name=c,kind=openai,base_url=https://x,colour=red");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("colour"));

  const std::string dir = testing::MakeTempDir("orch_provider_cfg");
  std::ofstream(dir + "/c.json") << R"({"providers": [{"name": "c", "kind": "openai",
      "base_url": "https://x.example/v1", "key_env": "K", "models": ["a"],
      "allow_client_key": true}], "replay_root": "/srv/replays"})";
  auto c = LoadConfigFile(dir + "/c.json");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->providers.size(), 1u);
  EXPECT_EQ(c->providers[0].models, std::vector<std::string>{"a"});
  EXPECT_TRUE(c->providers[0].allow_client_key);
  EXPECT_EQ(c->replay_root, "/srv/replays");
  EXPECT_TRUE(ValidateConfig(*c).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pkforge::orchestrator
