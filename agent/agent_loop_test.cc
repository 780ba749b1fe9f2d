// The LLM agent loop end to end: the real OpenAI/Anthropic clients talk to a
// local fake provider (scripted replies and faults), candidates go to a fake
// executor, every entry lands in a recording sink. Covers strategies (call
// and evaluation counts), every budget (the wall budget within 1 s),
// cancellation, feedback in the next prompt, trimming, failures, and a canary
// API key that must appear in no log line and no recorded entry.
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "agent/agent.h"
#include "agent/job_context.h"
#include "agent/testing/fake_evaluator.h"
#include "agent/testing/fake_http_server.h"
#include "agent/testing/recording_sink.h"
#include "common/ids.h"
#include "common/logging.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pkforge::agent {
namespace {

using testing::FakeEvaluator;
using testing::FakeHttpServer;
using testing::RecordedRequest;
using testing::RecordingSink;
using testing::ScriptedResponse;

constexpr char kKeyEnv[] = "PKF_AGENT_TEST_KEY";

std::string FileReply(int variant) {
  return fmt::format(
      "Here is an improved kernel.\n```cuda\n#include \"pkforge/candidate.h\"\n// variant {}\n"
      "extern \"C\" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in,\n"
      "                        pkf_tensor* out, int32_t n_out, void* stream) {{\n"
      "  return 0;\n}}\n```\n",
      variant);
}

int VariantOf(const std::string& source) {
  std::smatch m;
  static const std::regex re("// variant (\\d+)");
  return std::regex_search(source, m, re) ? std::stoi(m[1]) : -1;
}

// The prompt of a recorded call, both messages joined.
std::string PromptText(const LlmCallEntry& call) {
  auto j = nlohmann::json::parse(call.prompt);
  std::string s;
  for (const auto& m : j) s += m["content"].get<std::string>() + "\n";
  return s;
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class AgentLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = FakeHttpServer::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    setenv(kKeyEnv, "sk-agent-test-key-1", 1);
    server_->SetDefault([this](const RecordedRequest&) {
      return FakeHttpServer::OpenAiReply(FileReply(++replies_), 100, 50);
    });
  }

  v1::JobSpec Spec(v1::StrategyKind strategy = v1::STRATEGY_SEQUENTIAL) {
    v1::JobSpec spec;
    spec.set_problem("allreduce");
    spec.set_backend(v1::BACKEND_CUDA);
    spec.set_world_size(2);
    spec.set_dtype(v1::DTYPE_BF16);
    spec.mutable_size()->set_preset("tiny");
    auto* a = spec.mutable_agent();
    a->set_kind(v1::AGENT_KIND_LLM);
    a->mutable_llm()->set_provider(v1::PROVIDER_OPENAI);
    a->mutable_llm()->set_model("gpt-4o");
    a->mutable_llm()->set_base_url(server_->base_url() + "/v1");
    a->mutable_llm()->set_api_key_env(kKeyEnv);
    a->mutable_llm()->set_temperature(0.5);
    a->mutable_strategy()->set_kind(strategy);
    spec.mutable_eval()->set_trials(3);
    return spec;
  }

  AgentOptions Options() {
    AgentOptions o;
    o.llm.retry.initial_backoff_ms = 1;
    o.llm.retry.max_backoff_ms = 5;
    o.llm.jitter_seed = 7;
    return o;
  }

  absl::StatusOr<AgentResult> Run(const v1::JobSpec& spec, const CancelToken* cancel = nullptr,
                                  AgentOptions options = {}, bool default_options = true) {
    AgentEnv env;
    env.job_id = NewId("job");
    env.spec = spec;
    env.problem.set_name("allreduce");
    env.problem.set_statement_markdown("Sum x over ranks.");
    env.problem.set_reference_source(
        "// reference\nncclAllReduce(x, y, n, ncclBfloat16, ncclSum, comm, s);");
    env.device.add_gpus()->set_name("NVIDIA H200");
    env.evaluator = &eval_;
    env.sink = &sink_;
    env.cancel = cancel;
    job_id_ = env.job_id;
    auto agent = MakeAgent(std::move(env), default_options ? Options() : options);
    if (!agent.ok()) return agent.status();
    return (*agent)->Run();
  }

  // The sink saw causal order: each turn before its calls, each candidate
  // before its evaluation starts, each start before its end.
  void ExpectCausalOrder() {
    std::set<std::string> turns, candidates, started;
    for (const auto& tag : sink_.sequence()) {
      if (tag.rfind("turn:", 0) == 0) turns.insert(tag.substr(5));
      if (tag.rfind("llm:", 0) == 0) {
        EXPECT_TRUE(turns.count(tag.substr(4))) << tag;
      }
      if (tag.rfind("candidate:", 0) == 0) candidates.insert(tag.substr(10));
      if (tag.rfind("start:", 0) == 0) {
        const std::string rest = tag.substr(6);
        const size_t colon = rest.find(':');
        EXPECT_TRUE(candidates.count(rest.substr(colon + 1))) << tag;
        started.insert(rest.substr(0, colon));
      }
      if (tag.rfind("end:", 0) == 0) {
        EXPECT_TRUE(started.count(tag.substr(4))) << tag;
      }
    }
    EXPECT_FALSE(sink_.overlapped());
  }

  std::unique_ptr<FakeHttpServer> server_;
  std::atomic<int> replies_{0};
  FakeEvaluator eval_;
  RecordingSink sink_;
  std::string job_id_;
};

TEST_F(AgentLoopTest, SequentialRecordsEveryStepUntilMaxTurns) {
  eval_.set_queue_ms(250);
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_max_turns(3);
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop_reason, "max turns");
  EXPECT_EQ(r->turns, 3);
  EXPECT_EQ(r->llm_calls, 3);
  EXPECT_EQ(r->evaluations, 3);
  EXPECT_EQ(r->tokens, 3 * 150);
  EXPECT_NEAR(r->cost_usd, 3 * (100 * 2.5 + 50 * 10.0) / 1e6, 1e-12);
  EXPECT_EQ(server_->request_count(), 3);
  EXPECT_EQ(eval_.calls(), 3);
  ASSERT_EQ(sink_.turns().size(), 3u);
  ASSERT_EQ(sink_.llm_calls().size(), 3u);
  ASSERT_EQ(sink_.candidates().size(), 3u);
  ASSERT_EQ(sink_.evaluations().size(), 3u);
  ASSERT_EQ(sink_.improvements().size(), 1u);  // all 1.0x: only the first is an improvement
  ExpectCausalOrder();
  for (int i = 0; i < 3; ++i) {
    const auto t = sink_.turns()[i];
    EXPECT_EQ(t.index, i);
    EXPECT_EQ(t.job_id, job_id_);
    const auto call = sink_.llm_calls()[i];
    EXPECT_EQ(call.provider, "openai");
    EXPECT_EQ(call.model, "gpt-4o");
    EXPECT_EQ(call.prompt_tokens, 100);
    EXPECT_EQ(call.attempts, 1);
    EXPECT_TRUE(call.error.empty());
    EXPECT_GT(call.wall_us, 0);
    EXPECT_GE(call.elapsed_ms, call.started_elapsed_ms);
    const auto e = sink_.evaluations()[i];
    EXPECT_TRUE(e.error.ok());
    EXPECT_EQ(e.result.status(), v1::EvaluationResult::OK);
    EXPECT_DOUBLE_EQ(e.queue_ms, 250);  // queue time kept separately
    EXPECT_EQ(e.executor, "fake-executor");
    EXPECT_GE(e.elapsed_ms, e.started_elapsed_ms);
    EXPECT_EQ(sink_.candidates()[i].origin, "llm:file");
    EXPECT_EQ(sink_.candidates()[i].backend, "cuda");
  }
  // Later candidates name the best they refined as parent.
  EXPECT_EQ(sink_.candidates()[0].parent_sha256, "");
  EXPECT_EQ(sink_.candidates()[1].parent_sha256, sink_.candidates()[0].sha256);
  // The executor got the job's settings.
  auto reqs = eval_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].problem(), "allreduce");
  EXPECT_EQ(reqs[0].world_size(), 2);
  EXPECT_EQ(reqs[0].dtype(), v1::DTYPE_BF16);
  EXPECT_EQ(reqs[0].trials(), 3);
  EXPECT_EQ(reqs[0].size().preset(), "tiny");
  EXPECT_EQ(VariantOf(reqs[2].source()), 3);
}

TEST_F(AgentLoopTest, BestOfNIssuesNCallsPerTurnAndEvaluatesConcurrently) {
  eval_.set_latency_ms(400);  // long enough for the 3 evaluations to overlap under load
  v1::JobSpec spec = Spec(v1::STRATEGY_BEST_OF_N);
  spec.mutable_agent()->mutable_strategy()->set_n(3);
  spec.mutable_budget()->set_max_turns(2);
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->turns, 2);
  EXPECT_EQ(r->llm_calls, 6);
  EXPECT_EQ(r->evaluations, 6);
  EXPECT_EQ(server_->request_count(), 6);
  EXPECT_EQ(eval_.max_concurrency(), 3);
  ExpectCausalOrder();
  // Each of the n prompts asks for a distinct approach.
  EXPECT_NE(PromptText(sink_.llm_calls()[0]).find("candidate"), std::string::npos);
  EXPECT_NE(PromptText(sink_.llm_calls()[0]).find("of 3"), std::string::npos);
}

TEST_F(AgentLoopTest, BestOfNNeverExceedsMaxEvaluations) {
  v1::JobSpec spec = Spec(v1::STRATEGY_BEST_OF_N);
  spec.mutable_agent()->mutable_strategy()->set_n(4);
  spec.mutable_budget()->set_max_evaluations(6);
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop_reason, "max evaluations");
  EXPECT_EQ(r->evaluations, 6);
  EXPECT_EQ(r->llm_calls, 6);  // the second turn only asks for what can be evaluated
  EXPECT_EQ(r->turns, 2);
  EXPECT_EQ(eval_.calls(), 6);
}

TEST_F(AgentLoopTest, TreeExpandsTopKOfItsPopulation) {
  // Speedup grows with the variant number: later candidates are better.
  FakeEvaluator eval([](const v1::EvaluateRequest& req) {
    return FakeEvaluator::Ok(1.0 + 0.1 * VariantOf(req.source()));
  });
  v1::JobSpec spec = Spec(v1::STRATEGY_TREE);
  spec.mutable_agent()->mutable_strategy()->set_top_k(2);
  spec.mutable_agent()->mutable_strategy()->set_population(3);
  spec.mutable_budget()->set_max_turns(3);
  AgentEnv env;
  env.job_id = NewId("job");
  env.spec = spec;
  env.evaluator = &eval;
  env.sink = &sink_;
  auto agent = MakeAgent(env, Options());
  ASSERT_TRUE(agent.ok()) << agent.status();
  auto r = (*agent)->Run();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->turns, 3);
  EXPECT_EQ(r->llm_calls, 6);
  EXPECT_EQ(r->evaluations, 6);
  EXPECT_EQ(eval.calls(), 6);
  ASSERT_EQ(sink_.llm_calls().size(), 6u);
  // Round 1 starts from scratch, later rounds expand the best nodes.
  EXPECT_NE(PromptText(sink_.llm_calls()[0]).find("independent first candidates"),
            std::string::npos);
  const std::string late = PromptText(sink_.llm_calls()[4]) + PromptText(sink_.llm_calls()[5]);
  EXPECT_NE(late.find("refining node"), std::string::npos);
  EXPECT_NE(late.find("## Current file (node"), std::string::npos);
  ASSERT_TRUE(r->best_speedup.has_value());
  EXPECT_NEAR(*r->best_speedup, 1.6, 1e-9);
  // Children name the node they expanded as parent.
  int with_parent = 0;
  for (const auto& c : sink_.candidates()) with_parent += !c.parent_sha256.empty();
  EXPECT_EQ(with_parent, 4);
}

TEST_F(AgentLoopTest, NextPromptCarriesCompileErrorAndMismatchDetails) {
  FakeEvaluator eval([](const v1::EvaluateRequest& req) {
    const int v = VariantOf(req.source());
    if (v == 1)
      return FakeEvaluator::CompileError("kernel.cu(12): error: identifier \"foo\" is undefined");
    if (v == 2) return FakeEvaluator::WrongOutput(1, 4100, 2.5, std::nan(""));
    return FakeEvaluator::Ok(1.3);
  });
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_max_turns(3);
  AgentEnv env;
  env.job_id = NewId("job");
  env.spec = spec;
  env.evaluator = &eval;
  env.sink = &sink_;
  auto r = (*MakeAgent(env, Options()))->Run();
  ASSERT_TRUE(r.ok()) << r.status();
  auto calls = sink_.llm_calls();
  ASSERT_EQ(calls.size(), 3u);
  const std::string p2 = PromptText(calls[1]);
  EXPECT_NE(p2.find("Attempt 1 (turn 1): COMPILE_ERROR"), std::string::npos) << p2;
  EXPECT_NE(p2.find("kernel.cu(12): error: identifier \"foo\" is undefined"), std::string::npos);
  // With nothing correct yet, the failed file is the one to fix.
  EXPECT_NE(p2.find("most recent candidate, not correct yet: COMPILE_ERROR"), std::string::npos);
  const std::string p3 = PromptText(calls[2]);
  EXPECT_NE(p3.find("kernel.cu(12)"), std::string::npos);  // older feedback still there
  for (const char* d : {"Attempt 2 (turn 2): WRONG_OUTPUT", "rank 1",
                        "first mismatch at flat index 4100", "expected 2.5, got NaN"}) {
    EXPECT_NE(p3.find(d), std::string::npos) << d;
  }
  EXPECT_NEAR(*r->best_speedup, 1.3, 1e-9);
  EXPECT_EQ(r->last_status, v1::EvaluationResult::OK);
}

TEST_F(AgentLoopTest, RepliesWithoutCodeOrWithBadEditsBecomeFeedback) {
  server_->Enqueue(FakeHttpServer::OpenAiReply("I would first profile the kernel."));
  server_->Enqueue(FakeHttpServer::OpenAiReply(FileReply(7)));
  server_->Enqueue(FakeHttpServer::OpenAiReply(
      "<<<<<<< SEARCH\n  return 1;\n=======\n  return 2;\n>>>>>>> REPLACE\n"));
  server_->Enqueue(FakeHttpServer::OpenAiReply(
      "<<<<<<< SEARCH\n  return 0;\n=======\n  return cudaGetLastError();\n>>>>>>> REPLACE\n"));
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_max_turns(4);
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->turns, 4);  // every reply counts as a turn
  EXPECT_EQ(r->llm_calls, 4);
  EXPECT_EQ(r->evaluations, 2);  // only the file and the good edit
  auto calls = sink_.llm_calls();
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_NE(PromptText(calls[1]).find("reply not usable"), std::string::npos);
  EXPECT_NE(PromptText(calls[1]).find("contains no code"), std::string::npos);
  EXPECT_NE(PromptText(calls[3]).find("edit block 1 of 1 does not apply"), std::string::npos);
  auto cands = sink_.candidates();
  ASSERT_EQ(cands.size(), 2u);
  EXPECT_EQ(cands[0].origin, "llm:file");
  EXPECT_EQ(cands[1].origin, "llm:edits");
  EXPECT_EQ(cands[1].parent_sha256, cands[0].sha256);
  EXPECT_NE(cands[1].source.find("return cudaGetLastError();"), std::string::npos);
  EXPECT_EQ(cands[1].llm_call_id, calls[3].call_id);
  EXPECT_EQ(eval_.requests()[1].source(), cands[1].source);
}

TEST_F(AgentLoopTest, ProviderFaultsAreRetriedWithinOneCall) {
  server_->Enqueue(
      FakeHttpServer::Status(429, R"({"error":{"message":"rate"}})", {{"Retry-After", "0"}}));
  server_->Enqueue(FakeHttpServer::Status(500, "{}"));
  ScriptedResponse reset;
  reset.action = ScriptedResponse::Action::kReset;
  server_->Enqueue(reset);
  ScriptedResponse cut = FakeHttpServer::OpenAiReply(FileReply(1));
  cut.action = ScriptedResponse::Action::kDropMidBody;
  server_->Enqueue(cut);
  server_->Enqueue(FakeHttpServer::Status(200, "{\"choices\": ["));
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_max_turns(1);
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(sink_.llm_calls().size(), 1u);
  EXPECT_EQ(sink_.llm_calls()[0].attempts, 6);
  EXPECT_TRUE(sink_.llm_calls()[0].error.empty());
  EXPECT_EQ(r->evaluations, 1);
}

TEST_F(AgentLoopTest, PermanentProviderErrorFailsTheJob) {
  server_->SetDefault([](const RecordedRequest&) {
    return FakeHttpServer::Status(404, R"({"error":{"message":"model gpt-4o does not exist"}})");
  });
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_max_turns(5);
  auto r = Run(spec);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  EXPECT_NE(r.status().message().find("does not exist"), absl::string_view::npos);
  EXPECT_EQ(server_->request_count(), 1);
  ASSERT_EQ(sink_.llm_calls().size(), 1u);
  EXPECT_FALSE(sink_.llm_calls()[0].error.empty());
}

TEST_F(AgentLoopTest, RepeatedInfrastructureFailuresFailTheJob) {
  eval_.FailNext(100, absl::UnavailableError("no executor reachable"));
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_max_turns(10);
  auto r = Run(spec);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_NE(r.status().message().find("3 infrastructure failures in a row (evaluations)"),
            absl::string_view::npos);
  EXPECT_EQ(eval_.calls(), 3);
  ASSERT_EQ(sink_.evaluations().size(), 3u);
  EXPECT_EQ(sink_.evaluations()[0].error.code(), absl::StatusCode::kUnavailable);
}

TEST_F(AgentLoopTest, SinkFailureStopsTheJob) {
  sink_.FailAfter(4);
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_max_turns(10);
  auto r = Run(spec);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_NE(r.status().message().find("recording the trajectory"), absl::string_view::npos);
  EXPECT_LE(eval_.calls(), 1);
}

// ---------------------------------------------------------------- budgets --

TEST_F(AgentLoopTest, WallBudgetStopsLoopOnTime) {
  server_->SetDefault([this](const RecordedRequest&) {
    ScriptedResponse r = FakeHttpServer::OpenAiReply(FileReply(++replies_));
    r.delay_ms = 120;
    return r;
  });
  eval_.set_latency_ms(150);
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_wall_seconds(1.0);
  const auto start = std::chrono::steady_clock::now();
  auto r = Run(spec);
  const double took = SecondsSince(start);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop_reason, "wall budget");
  EXPECT_GE(took, 0.95);
  EXPECT_LT(took, 2.0);  // within 1 s of the budget
  EXPECT_GE(r->evaluations, 2);
  EXPECT_LE(r->elapsed_ms, 2000);
}

TEST_F(AgentLoopTest, WallBudgetInterruptsAHangingProvider) {
  server_->SetDefault([](const RecordedRequest&) {
    ScriptedResponse r;
    r.action = ScriptedResponse::Action::kNeverAnswer;
    return r;
  });
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_wall_seconds(0.8);
  const auto start = std::chrono::steady_clock::now();
  auto r = Run(spec);
  const double took = SecondsSince(start);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop_reason, "wall budget");
  EXPECT_LT(took, 1.8);
  ASSERT_EQ(sink_.llm_calls().size(), 1u);
  EXPECT_NE(sink_.llm_calls()[0].error.find("DEADLINE_EXCEEDED"), std::string::npos)
      << sink_.llm_calls()[0].error;
}

TEST_F(AgentLoopTest, WallBudgetInterruptsAHangingEvaluation) {
  eval_.set_latency_ms(60'000);
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_wall_seconds(0.8);
  const auto start = std::chrono::steady_clock::now();
  auto r = Run(spec);
  const double took = SecondsSince(start);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop_reason, "wall budget");
  EXPECT_LT(took, 1.8);
  ASSERT_EQ(sink_.evaluations().size(), 1u);
  EXPECT_EQ(sink_.evaluations()[0].error.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(r->evaluations, 0);  // no result came back
}

TEST_F(AgentLoopTest, CancellationStopsAtAnyPoint) {
  server_->SetDefault([](const RecordedRequest&) {
    ScriptedResponse r;
    r.action = ScriptedResponse::Action::kNeverAnswer;
    return r;
  });
  CancelToken cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel.Cancel(absl::CancelledError("cancelled by user"));
  });
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_max_turns(100);
  const auto start = std::chrono::steady_clock::now();
  auto r = Run(spec, &cancel);
  canceller.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop_reason, "cancelled");
  EXPECT_LT(SecondsSince(start), 1.0);
  ASSERT_EQ(sink_.llm_calls().size(), 1u);
  EXPECT_NE(sink_.llm_calls()[0].error.find("cancelled by user"), std::string::npos);
}

TEST_F(AgentLoopTest, TokenAndCostBudgets) {
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_max_tokens(400);  // 150 per call: stops after the 3rd
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop_reason, "token budget");
  EXPECT_EQ(r->llm_calls, 3);

  v1::JobSpec spec2 = Spec();
  spec2.mutable_budget()->set_max_cost_usd(0.0015);  // 0.00075 per call
  auto r2 = Run(spec2);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->stop_reason, "cost budget");
  EXPECT_EQ(r2->llm_calls, 2);
  EXPECT_GE(r2->cost_usd, 0.0015);
}

TEST_F(AgentLoopTest, TargetSpeedupStopsTheJob) {
  FakeEvaluator eval([](const v1::EvaluateRequest& req) {
    return FakeEvaluator::Ok(1.0 + 0.3 * VariantOf(req.source()));  // 1.3, 1.6, 1.9, ...
  });
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_max_turns(10);
  spec.mutable_budget()->set_target_speedup(1.5);
  AgentEnv env;
  env.job_id = NewId("job");
  env.spec = spec;
  env.evaluator = &eval;
  env.sink = &sink_;
  auto r = (*MakeAgent(env, Options()))->Run();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop_reason, "target speedup reached");
  EXPECT_EQ(r->evaluations, 2);
  EXPECT_NEAR(*r->best_speedup, 1.6, 1e-9);
  auto imp = sink_.improvements();
  ASSERT_EQ(imp.size(), 2u);
  EXPECT_DOUBLE_EQ(imp[0].previous, 0);
  EXPECT_NEAR(imp[1].previous, 1.3, 1e-9);
  EXPECT_EQ(r->best_evaluation_id, imp[1].evaluation_id);
}

TEST_F(AgentLoopTest, TrimmingKeepsEveryPromptWithinTheContextBudget) {
  FakeEvaluator eval([](const v1::EvaluateRequest&) {
    return FakeEvaluator::CompileError(std::string(3500, 'e'));
  });
  v1::JobSpec spec = Spec();
  spec.mutable_agent()->mutable_llm()->set_context_tokens(6000);
  spec.mutable_budget()->set_max_turns(12);
  AgentEnv env;
  env.job_id = NewId("job");
  env.spec = spec;
  env.evaluator = &eval;
  env.sink = &sink_;
  auto r = (*MakeAgent(env, Options()))->Run();
  ASSERT_TRUE(r.ok()) << r.status();
  auto calls = sink_.llm_calls();
  ASSERT_EQ(calls.size(), 12u);
  for (const auto& c : calls) {
    auto j = nlohmann::json::parse(c.prompt);
    int64_t tokens = 0;
    for (const auto& m : j) tokens += EstimateTokens(m["content"].get<std::string>());
    EXPECT_LE(tokens, 6000);
  }
  const std::string last = PromptText(calls.back());
  EXPECT_NE(last.find("older attempts omitted"), std::string::npos);
  EXPECT_NE(last.find("Attempt 11 (turn 11)"), std::string::npos);
  EXPECT_EQ(last.find("Attempt 1 (turn 1)"), std::string::npos);
}

TEST_F(AgentLoopTest, AnthropicProviderDrivesTheLoop) {
  server_->SetDefault([this](const RecordedRequest& req) {
    EXPECT_EQ(req.target, "/v1/messages");
    return FakeHttpServer::AnthropicReply(FileReply(++replies_), 80, 20);
  });
  v1::JobSpec spec = Spec();
  spec.mutable_agent()->mutable_llm()->set_provider(v1::PROVIDER_ANTHROPIC);
  spec.mutable_agent()->mutable_llm()->set_model("claude-sonnet-4");
  spec.mutable_agent()->mutable_llm()->set_base_url(server_->base_url());
  spec.mutable_budget()->set_max_turns(2);
  auto r = Run(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->evaluations, 2);
  EXPECT_EQ(r->tokens, 200);
  EXPECT_EQ(sink_.llm_calls()[0].provider, "anthropic");
}

TEST_F(AgentLoopTest, InvalidSpecsAreRejected) {
  v1::JobSpec spec = Spec();  // no budget limit at all
  EXPECT_EQ(Run(spec).status().code(), absl::StatusCode::kInvalidArgument);
  spec.mutable_budget()->set_max_turns(1);
  spec.set_world_size(0);
  EXPECT_EQ(Run(spec).status().code(), absl::StatusCode::kInvalidArgument);
  spec = Spec();
  spec.mutable_budget()->set_wall_seconds(-1);
  EXPECT_EQ(Run(spec).status().code(), absl::StatusCode::kInvalidArgument);
}

// ----------------------------------------------------------------- canary --

TEST_F(AgentLoopTest, CanaryKeyAppearsInNoLogLineAndNoRecordedEntry) {
  const std::string canary = "sk-canary-7f3a9c2e51d04b8a";
  setenv(kKeyEnv, canary.c_str(), 1);
  const std::string log_path =
      (std::filesystem::temp_directory_path() / fmt::format("pkf_canary_{}.log", getpid()))
          .string();
  std::filesystem::remove(log_path);
  ASSERT_TRUE(InitLogging({.level = "debug", .file = log_path, .name = "agent_test"}).ok());

  // The provider misbehaves in every way that could leak the key: it echoes
  // it in a retryable error, in the reply text, and in a final auth error.
  server_->Enqueue(FakeHttpServer::Status(
      500, fmt::format(R"({{"error":{{"message":"upstream saw key {}"}}}})", canary)));
  server_->Enqueue(
      FakeHttpServer::OpenAiReply(FileReply(1) + "\nBy the way, your key is " + canary + "\n"));
  server_->Enqueue(FakeHttpServer::OpenAiReply("no code, but the key again: " + canary));
  server_->SetDefault([&](const RecordedRequest&) {
    return FakeHttpServer::Status(
        401, fmt::format(R"({{"error":{{"message":"Incorrect API key provided: {}"}}}})", canary));
  });
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_max_turns(5);
  auto r = Run(spec);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated) << r.status();
  EXPECT_EQ(std::string(r.status().message()).find(canary), std::string::npos);

  // The key did reach the provider (and only in the auth header).
  auto reqs = server_->requests();
  ASSERT_GE(reqs.size(), 4u);
  for (const auto& q : reqs) {
    EXPECT_EQ(q.headers.at("authorization"), "Bearer " + canary);
    EXPECT_EQ(q.body.find(canary), std::string::npos);
  }
  // Not in any recorded entry...
  auto texts = sink_.AllText();
  EXPECT_GE(texts.size(), 6u);
  for (const auto& t : texts) EXPECT_EQ(t.find(canary), std::string::npos) << t.substr(0, 500);
  // The retried error and the final auth error were recorded, redacted.
  ASSERT_EQ(sink_.llm_calls().size(), 3u);
  EXPECT_NE(sink_.llm_calls()[0].note.find("upstream saw key ***"), std::string::npos)
      << sink_.llm_calls()[0].note;
  EXPECT_NE(sink_.llm_calls()[2].error.find("Incorrect API key provided: ***"), std::string::npos)
      << sink_.llm_calls()[2].error;
  // ...and not in any log line (the failed calls were logged).
  ASSERT_TRUE(InitLogging({.level = "warn"}).ok());  // back to stderr, closes the file
  std::ifstream in(log_path);
  std::stringstream log;
  log << in.rdbuf();
  EXPECT_NE(log.str().find("LLM call"), std::string::npos) << log.str();
  EXPECT_EQ(log.str().find(canary), std::string::npos) << log.str();
  std::filesystem::remove(log_path);
}

// A turn's works on a bounded number of threads (a best_of_n of 2^31-1
// started one thread per candidate before the strategy was capped: API
// fuzzing, session 16): every index runs exactly once, never more than
// kMaxConcurrentWorks at a time.
TEST(RunConcurrently, EveryIndexOnceOnAtMostTheBoundOfThreads) {
  constexpr int kN = 200;
  std::vector<std::atomic<int>> runs(kN);
  std::atomic<int> now{0}, most{0};
  internal::RunConcurrently(kN, [&](int i) {
    const int in = now.fetch_add(1) + 1;
    int prev = most.load();
    while (in > prev && !most.compare_exchange_weak(prev, in)) {
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    runs[static_cast<size_t>(i)].fetch_add(1);
    now.fetch_sub(1);
  });
  for (int i = 0; i < kN; ++i) EXPECT_EQ(runs[static_cast<size_t>(i)].load(), 1) << i;
  EXPECT_LE(most.load(), internal::kMaxConcurrentWorks);
  EXPECT_GT(most.load(), 1);
}

}  // namespace
}  // namespace pkforge::agent
