// The search agent against a fake executor whose speedup is a known function
// of the kernel parameters (read back from the generated source), so the
// successive-halving schedule and its choice can be checked exactly.
#include "agent/search_agent.h"

#include <algorithm>
#include <regex>
#include <set>

#include "agent/agent.h"
#include "agent/kernel_templates.h"
#include "agent/testing/fake_evaluator.h"
#include "agent/testing/recording_sink.h"
#include "common/ids.h"
#include "gtest/gtest.h"
#include "kernels/harness/judge.h"  // LaunchOptions only (header, no link)

namespace pkforge::agent {
namespace {

using testing::FakeEvaluator;
using testing::RecordingSink;

// Host allreduce: bigger chunks (fewer barriers), two_shot and big tiles help.
v1::EvaluationResult ModelSpeedup(const v1::EvaluateRequest& req) {
  std::smatch m;
  const std::string& src = req.source();
  static const std::regex re("allreduce: (\\w+) chunk=(\\d+)(KiB|MiB) tile=(\\d+)");
  if (!std::regex_search(src, m, re)) return FakeEvaluator::CompileError("unexpected source");
  const double chunk_kib = std::stod(m[2]) * (m[3] == "MiB" ? 1024 : 1);
  double s = 1.0 + 0.2 * std::log2(chunk_kib / 16);
  if (m[1] == "two_shot") s += 0.1;
  if (m[4] == "2048") s += 0.05;
  return FakeEvaluator::Ok(s);
}

class SearchAgentTest : public ::testing::Test {
 protected:
  v1::JobSpec Spec(const std::string& problem = "allreduce", v1::Backend b = v1::BACKEND_HOST) {
    v1::JobSpec spec;
    spec.set_problem(problem);
    spec.set_backend(b);
    spec.set_world_size(4);
    spec.set_dtype(v1::DTYPE_F32);
    spec.set_seed(1234);
    spec.mutable_agent()->set_kind(v1::AGENT_KIND_SEARCH);
    spec.mutable_budget()->set_wall_seconds(60);
    return spec;
  }

  absl::StatusOr<AgentResult> Run(const v1::JobSpec& spec, Evaluator* eval, AgentOptions o = {}) {
    AgentEnv env;
    env.job_id = NewId("job");
    env.spec = spec;
    env.evaluator = eval;
    env.sink = &sink_;
    auto agent = MakeAgent(env, o);
    if (!agent.ok()) return agent.status();
    return (*agent)->Run();
  }

  RecordingSink sink_;
};

TEST(SuccessiveHalving, PlanShrinksByEtaAndFitsTheBudget) {
  auto plan = PlanSuccessiveHalving(40, 0, 3, 10, 1000);
  ASSERT_EQ(plan.size(), 5u);
  const int configs[] = {40, 14, 5, 2, 1};
  const int iters[] = {10, 30, 90, 270, 810};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(plan[i].configs, configs[i]);
    EXPECT_EQ(plan[i].timed_iters, iters[i]);
  }
  plan = PlanSuccessiveHalving(40, 20, 3, 100, 500);
  int total = 0;
  for (const auto& r : plan) total += r.configs;
  EXPECT_LE(total, 20);
  EXPECT_GE(total, 17);  // and uses most of it
  EXPECT_EQ(plan.back().configs, 1);
  EXPECT_EQ(plan.back().timed_iters, 500);  // capped
  EXPECT_EQ(PlanSuccessiveHalving(40, 1, 3, 10, 100).size(), 1u);
  EXPECT_TRUE(PlanSuccessiveHalving(0, 0, 3, 10, 100).empty());
}

TEST_F(SearchAgentTest, HalvingFindsTheFastestConfigurationAndImprovesOnTheBaseline) {
  FakeEvaluator eval(ModelSpeedup);
  auto r = Run(Spec(), &eval);
  ASSERT_TRUE(r.ok()) << r.status();
  const int space = static_cast<int>(SearchSpace("allreduce", v1::BACKEND_HOST).size());
  ASSERT_EQ(space, 16);
  // 16 -> 6 -> 2 -> 1 configurations, one turn per rung.
  EXPECT_EQ(r->evaluations, 16 + 6 + 2 + 1);
  EXPECT_EQ(r->turns, 4);
  EXPECT_EQ(r->stop_reason, "nothing left to try");
  ASSERT_TRUE(r->best_speedup.has_value());
  EXPECT_NEAR(*r->best_speedup, 1.0 + 0.2 * 6 + 0.1 + 0.05, 1e-9);
  // Rung 0 screens with 10 timed iterations; at the default settings the
  // later rungs run at the job's own (the executor's default, sent as 0).
  auto reqs = eval.requests();
  EXPECT_EQ(reqs[0].timed_iters(), 10);
  EXPECT_EQ(reqs[16].timed_iters(), 0);
  EXPECT_EQ(reqs[22].timed_iters(), 0);
  EXPECT_EQ(reqs[24].timed_iters(), 0);
  EXPECT_NE(reqs[24].source().find("allreduce: two_shot chunk=1MiB tile=2048"), std::string::npos);
  // The baseline comes first and the search improves on it.
  auto cands = sink_.candidates();
  ASSERT_EQ(cands.size(), 16u);  // re-evaluations reuse the recorded candidate
  EXPECT_EQ(cands[0].origin, "search:one_shot chunk=16KiB tile=256");
  auto evals = sink_.evaluations();
  ASSERT_TRUE(evals[0].result.has_speedup());
  EXPECT_GT(*r->best_speedup, evals[0].result.speedup());
  EXPECT_NE(sink_.turns()[1].note.find("rung 1: 6 configurations, 30 timed iterations"),
            std::string::npos);
}

// Issue #18 item 5: rungs timed with other iteration counts than the job's
// are recorded as not comparable and never make the job's best (no
// best_improved from them); the agent's choice is still the final rung's
// winner, the candidate the orchestrator re-measures.
TEST_F(SearchAgentTest, RungsAtOtherSettingsAreNotComparableAndMakeNoBest) {
  FakeEvaluator eval(ModelSpeedup);
  v1::JobSpec spec = Spec();
  spec.mutable_eval()->set_timed_iters(10);  // rung 0 runs at the job's own setting
  auto r = Run(spec, &eval);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto evals = sink_.evaluations();
  ASSERT_EQ(evals.size(), 16u + 6 + 2 + 1);
  std::set<std::string> comparable;
  for (size_t i = 0; i < evals.size(); ++i) {
    EXPECT_EQ(evals[i].timed_iters, i < 16 ? 10 : i < 22 ? 30 : i < 24 ? 90 : 270) << i;
    EXPECT_EQ(evals[i].comparable, i < 16) << i;
    EXPECT_FALSE(evals[i].final_measurement);
    if (evals[i].comparable) comparable.insert(evals[i].evaluation_id);
  }
  ASSERT_FALSE(sink_.improvements().empty());
  for (const auto& b : sink_.improvements()) {
    EXPECT_EQ(comparable.count(b.evaluation_id), 1u) << "a rung at other settings improved the best";
  }
  EXPECT_EQ(r->best_evaluation_id, evals.back().evaluation_id);  // the final rung decides
  EXPECT_NE(sink_.turns()[1].note.find("30 timed iterations (other settings"), std::string::npos)
      << sink_.turns()[1].note;
}

// Issue #18 item 5 for a job at the default settings (timed_iters 0, what
// `pkforge local` submits): its own count is the executor's default (30).
// Rung 0 screens with 10 iterations (other settings, apart); every later rung
// runs at the job's own settings, so the job has a best-so-far during the
// search and the agent's choice is that best.
TEST_F(SearchAgentTest, DefaultSettingsJobChoosesOnItsOwnBestSoFarAxis) {
  FakeEvaluator eval(ModelSpeedup);
  auto r = Run(Spec(), &eval);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto evals = sink_.evaluations();
  ASSERT_EQ(evals.size(), 16u + 6 + 2 + 1);
  std::set<std::string> comparable;
  double best_comparable = 0;
  for (size_t i = 0; i < evals.size(); ++i) {
    EXPECT_EQ(evals[i].timed_iters, i < 16 ? 10 : 0) << i;  // 0: the executor's default
    EXPECT_EQ(evals[i].comparable, i >= 16) << i;
    if (!evals[i].comparable) continue;
    comparable.insert(evals[i].evaluation_id);
    best_comparable = std::max(best_comparable, evals[i].result.speedup());
  }
  // The best-so-far: improvements only from the rungs at the job's settings.
  const auto improvements = sink_.improvements();
  ASSERT_FALSE(improvements.empty());
  for (const auto& b : improvements) EXPECT_EQ(comparable.count(b.evaluation_id), 1u);
  EXPECT_DOUBLE_EQ(improvements.back().speedup, best_comparable);
  // The choice (what the orchestrator re-measures) is that best.
  ASSERT_TRUE(r->best_speedup.has_value());
  EXPECT_EQ(comparable.count(r->best_evaluation_id), 1u);
  EXPECT_DOUBLE_EQ(*r->best_speedup, best_comparable);
  EXPECT_NEAR(*r->best_speedup, 1.0 + 0.2 * 6 + 0.1 + 0.05, 1e-9);
  const auto turns = sink_.turns();
  ASSERT_EQ(turns.size(), 4u);
  EXPECT_NE(turns[0].note.find("10 timed iterations (other settings than the job's"),
            std::string::npos)
      << turns[0].note;
  EXPECT_NE(turns[1].note.find("30 timed iterations (the job's own settings: the executor's "
                               "default)"),
            std::string::npos)
      << turns[1].note;
}

// A budget for one rung only: at the default settings that one rung (its
// last) runs at the job's own settings, so even then the job has a best.
TEST_F(SearchAgentTest, DefaultSettingsSingleRungRunsAtTheJobsOwnSettings) {
  FakeEvaluator eval(ModelSpeedup);
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_max_evaluations(1);
  auto r = Run(spec, &eval);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto evals = sink_.evaluations();
  ASSERT_EQ(evals.size(), 1u);
  EXPECT_EQ(evals[0].timed_iters, 0);
  EXPECT_TRUE(evals[0].comparable);
  EXPECT_EQ(sink_.improvements().size(), 1u);
  EXPECT_EQ(r->best_evaluation_id, evals[0].evaluation_id);
}

// The agent's idea of the executor's default is the worker's (a request with
// timed_iters 0 runs `pkforge-worker launch` without --iters).
TEST(SearchAgentDefaults, ExecutorDefaultTimedItersIsTheWorkersDefault) {
  EXPECT_EQ(AgentOptions().executor_default_timed_iters, kernels::LaunchOptions().iters);
}

TEST_F(SearchAgentTest, FailedConfigurationsAreDropped) {
  FakeEvaluator eval([](const v1::EvaluateRequest& req) {
    if (req.source().find("two_shot") != std::string::npos) {
      return FakeEvaluator::WrongOutput(0, 1, 2, 3);
    }
    return ModelSpeedup(req);
  });
  auto r = Run(Spec(), &eval);
  ASSERT_TRUE(r.ok()) << r.status();
  auto reqs = eval.requests();
  for (size_t i = 16; i < reqs.size(); ++i) {
    EXPECT_EQ(reqs[i].source().find("two_shot"), std::string::npos) << i;
  }
  EXPECT_NEAR(*r->best_speedup, 1.0 + 0.2 * 6 + 0.05, 1e-9);
}

TEST_F(SearchAgentTest, RespectsTheEvaluationBudgetAndRunsInParallel) {
  FakeEvaluator eval(ModelSpeedup);
  eval.set_latency_ms(100);
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_max_evaluations(10);
  AgentOptions o;
  o.parallel_evaluations = 2;
  auto r = Run(spec, &eval, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LE(r->evaluations, 10);
  EXPECT_GE(r->evaluations, 8);
  EXPECT_EQ(eval.max_concurrency(), 2);
  EXPECT_EQ(sink_.evaluation_starts().size(), static_cast<size_t>(r->evaluations));
}

TEST_F(SearchAgentTest, WallBudgetNarrowsTheFirstRungSoTheHalvingFinishes) {
  // 16 configurations at 200 ms each: 16 + 6 + 2 + 1 evaluations (5 s) do not
  // fit in 4 s, so without narrowing the budget ends during rung 1. Narrowed
  // to fit 80% of the time left (~15 evaluations: 9 + 3 + 1), it finishes.
  FakeEvaluator eval(ModelSpeedup);
  eval.set_latency_ms(200);
  v1::JobSpec spec = Spec();
  spec.mutable_budget()->set_wall_seconds(4);
  auto r = Run(spec, &eval);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop_reason, "nothing left to try");
  EXPECT_LT(r->evaluations, 16);
  EXPECT_GE(r->evaluations, 7);
  ASSERT_GE(sink_.turns().size(), 3u);
  bool narrowed = false;
  for (const auto& l : sink_.logs())
    narrowed |= l.text.find("rung 0 narrowed from 16 to") != std::string::npos;
  EXPECT_TRUE(narrowed);
  ASSERT_TRUE(r->best_speedup.has_value());
}

TEST_F(SearchAgentTest, CudaSpaceSearchesAllProblems) {
  for (const char* p : {"allreduce", "allgather", "reducescatter"}) {
    FakeEvaluator eval;
    v1::JobSpec spec = Spec(p, v1::BACKEND_CUDA);
    spec.mutable_budget()->set_max_evaluations(12);
    auto r = Run(spec, &eval);
    ASSERT_TRUE(r.ok()) << p << ": " << r.status();
    EXPECT_GE(r->evaluations, 10) << p;
    EXPECT_NE(eval.requests()[0].source().find("cudaStream_t"), std::string::npos);
  }
}

TEST_F(SearchAgentTest, UnsupportedProblemIsUnimplemented) {
  FakeEvaluator eval;
  auto r = Run(Spec("alltoall"), &eval);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented) << r.status();
  v1::JobSpec spec = Spec();
  spec.mutable_agent()->set_search_algorithm("bayesian");
  EXPECT_EQ(Run(spec, &eval).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pkforge::agent
