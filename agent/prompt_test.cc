#include "agent/prompt.h"

#include <string>

#include "agent/testing/fake_evaluator.h"
#include "gtest/gtest.h"

namespace pkforge::agent {
namespace {

using testing::FakeEvaluator;

class PromptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_.set_problem("allreduce");
    spec_.set_backend(v1::BACKEND_CUDA);
    spec_.set_world_size(8);
    spec_.set_dtype(v1::DTYPE_BF16);
    spec_.mutable_size()->set_preset("default");
    problem_.set_name("allreduce");
    problem_.set_category("collective");
    problem_.set_statement_markdown("Sum x over all ranks into y. STATEMENT-MARKER.\n");
    problem_.set_reference_source("// REFERENCE-MARKER\nncclAllReduce(...);\n");
    auto* t = problem_.add_inputs();
    t->set_name("x");
    t->set_dtype(v1::DTYPE_BF16);
    t->add_shape(4096);
    t->add_shape(8192);
    auto* g = device_.add_gpus();
    g->set_name("NVIDIA H200");
    g->set_sm_count(132);
    g->set_compute_capability_major(9);
    g->set_compute_capability_minor(0);
    g->set_healthy(true);
    auto* l = device_.add_topology();
    l->set_src(0);
    l->set_dst(1);
    l->set_link("NV18");
    l->set_p2p_access(true);
    l->set_measured_gbps(371);
    device_.mutable_ceilings()->set_peer_gbps(377.5);
    device_.mutable_ceilings()->set_source("measured");
    device_.set_nccl_version("2.27.3");
  }

  PromptInputs Inputs() {
    PromptInputs in;
    in.spec = &spec_;
    in.problem = &problem_;
    in.device = &device_;
    in.context_tokens = 100000;
    return in;
  }

  static std::string All(const Prompt& p) {
    return p.messages[0].content + "\n" + p.messages[1].content;
  }

  v1::JobSpec spec_;
  v1::ProblemInfo problem_;
  v1::DeviceInfo device_;
};

TEST_F(PromptTest, ContainsEverySection) {
  PromptInputs in = Inputs();
  in.base_source = "// CURRENT-BEST-MARKER\nextern \"C\" int pkf_run() { return 0; }";
  in.base_description = "current best: OK, 1.200x vs reference";
  Prompt p = BuildPrompt(in);
  ASSERT_EQ(p.messages.size(), 2u);
  EXPECT_EQ(p.messages[0].role, "system");
  const std::string s = All(p);
  // Role, rules and the ABI (the real header text, embedded at build time).
  EXPECT_NE(s.find("expert GPU kernel engineer"), std::string::npos);
  EXPECT_NE(s.find("typedef struct pkf_context"), std::string::npos);
  EXPECT_NE(s.find("int pkf_run(pkf_context* ctx, const pkf_tensor* in"), std::string::npos);
  EXPECT_NE(s.find("nvcc -shared"), std::string::npos);
  // Reply format.
  EXPECT_NE(s.find("<<<<<<< SEARCH"), std::string::npos);
  EXPECT_NE(s.find(">>>>>>> REPLACE"), std::string::npos);
  // Principles sheet facts, phrased as guidance, overridden by measurements.
  for (const char* fact :
       {"7.2x", "5.1x", "3x", "hundreds of MB", "about 15", "about 76", "multimem",
        "warp-specialized", "fine-grained signalling", "trust the measurements"}) {
    EXPECT_NE(s.find(fact), std::string::npos) << fact;
  }
  // Hardware from DeviceInfo.
  for (const char* hw : {"NVIDIA H200", "132 SMs", "sm_90", "NV18", "371 GB/s", "peer 378 GB/s",
                         "(measured)", "NCCL 2.27.3"}) {
    EXPECT_NE(s.find(hw), std::string::npos) << hw;
  }
  // Problem, tensors, reference, current best.
  EXPECT_NE(s.find("STATEMENT-MARKER"), std::string::npos);
  EXPECT_NE(s.find("world size 8, dtype bf16, size default"), std::string::npos);
  EXPECT_NE(s.find("input `x`: bf16 [4096, 8192]"), std::string::npos);
  EXPECT_NE(s.find("REFERENCE-MARKER"), std::string::npos);
  EXPECT_NE(s.find("CURRENT-BEST-MARKER"), std::string::npos);
  EXPECT_NE(s.find("current best: OK, 1.200x"), std::string::npos);
  EXPECT_FALSE(p.over_budget);
  EXPECT_EQ(p.estimated_tokens,
            EstimateTokens(p.messages[0].content) + EstimateTokens(p.messages[1].content));
}

TEST_F(PromptTest, RendersCompileErrorsMismatchesAndTimings) {
  std::string ce = RenderResult(
      FakeEvaluator::CompileError("kernel.cu(12): error: identifier \"foo\" is undefined"));
  EXPECT_NE(ce.find("COMPILE_ERROR"), std::string::npos);
  EXPECT_NE(ce.find("kernel.cu(12): error: identifier \"foo\" is undefined"), std::string::npos);
  std::string wo = RenderResult(FakeEvaluator::WrongOutput(3, 4100, 2.5, std::nan("")));
  for (const char* d : {"WRONG_OUTPUT", "0 of 5 trials passed", "rank 3", "output `y`",
                        "17 of 4096 elements mismatch", "first mismatch at flat index 4100",
                        "[64, 4]", "expected 2.5, got NaN"}) {
    EXPECT_NE(wo.find(d), std::string::npos) << d << "\n" << wo;
  }
  v1::EvaluationResult ok = FakeEvaluator::Ok(1.25);
  ok.mutable_roofline()->set_candidate_bus_gbps(310);
  ok.mutable_roofline()->set_reference_bus_gbps(250);
  ok.mutable_profile()->set_tool("ncu");
  ok.mutable_profile()->set_text("PROFILE-MARKER dram 80%");
  auto* cc = ok.add_cheat_checks();
  cc->set_check("speedup_plausibility");
  cc->set_passed(false);
  cc->set_flag_only(true);
  cc->set_detail("above roofline");
  std::string r = RenderResult(ok);
  for (const char* d : {"speedup: 1.250x", "reference median 100 us", "candidate median 80 us",
                        "25.0% of roofline", "bus bandwidth: candidate 310.0 GB/s",
                        "PROFILE-MARKER", "speedup_plausibility` flagged for review"}) {
    EXPECT_NE(r.find(d), std::string::npos) << d << "\n" << r;
  }
  EXPECT_EQ(SummarizeResult(ok), "OK, 1.250x vs reference, 25% of roofline");
}

TEST_F(PromptTest, TrimsOldestFeedbackFirstAndStaysWithinBudget) {
  PromptInputs in = Inputs();
  in.base_source = "// CURRENT-BEST-MARKER\n" + std::string(2000, 'b');
  for (int i = 1; i <= 40; ++i) {
    in.history.push_back(
        {"Attempt " + std::to_string(i) + " (turn " + std::to_string(i) + "): COMPILE_ERROR",
         std::string(3000, 'x')});
  }
  const Prompt full = BuildPrompt(in);
  EXPECT_EQ(full.feedback_dropped, 0);
  in.context_tokens = 12000;
  const Prompt p = BuildPrompt(in);
  EXPECT_LE(p.estimated_tokens, 12000);
  EXPECT_FALSE(p.over_budget);
  EXPECT_GT(p.feedback_dropped, 0);
  EXPECT_GT(p.feedback_included, 0);
  EXPECT_EQ(p.feedback_dropped + p.feedback_included, 40);
  const std::string s = All(p);
  EXPECT_EQ(s.find("### Attempt 1 (turn 1)"), std::string::npos);    // oldest gone
  EXPECT_NE(s.find("### Attempt 40 (turn 40)"), std::string::npos);  // newest kept
  EXPECT_NE(s.find("older attempts omitted"), std::string::npos);
  // Never trimmed: ABI, statement, current best.
  EXPECT_NE(s.find("typedef struct pkf_context"), std::string::npos);
  EXPECT_NE(s.find("STATEMENT-MARKER"), std::string::npos);
  EXPECT_NE(s.find("CURRENT-BEST-MARKER"), std::string::npos);
  EXPECT_FALSE(p.principles_shortened);
}

TEST_F(PromptTest, ShortensPrinciplesThenReferenceAndFlagsWhatCannotFit) {
  PromptInputs in = Inputs();
  problem_.set_reference_source("// REFERENCE-MARKER\n" + std::string(40000, 'r'));
  in.history.push_back({"Attempt 1 (turn 1): OK", "fine"});
  in.context_tokens = 6000;
  Prompt p = BuildPrompt(in);
  EXPECT_EQ(p.feedback_dropped, 1);
  EXPECT_TRUE(p.principles_shortened);
  EXPECT_TRUE(p.reference_trimmed);
  EXPECT_LE(p.estimated_tokens, 6000);
  EXPECT_NE(All(p).find("reference truncated"), std::string::npos);
  EXPECT_NE(All(p).find("REFERENCE-MARKER"), std::string::npos);  // the head is kept
  // The mandatory parts alone exceed a tiny budget: sent anyway, flagged.
  in.context_tokens = 500;
  p = BuildPrompt(in);
  EXPECT_TRUE(p.over_budget);
  EXPECT_NE(All(p).find("typedef struct pkf_context"), std::string::npos);
}

TEST_F(PromptTest, HostBackendSaysHowRanksShareMemory) {
  spec_.set_backend(v1::BACKEND_HOST);
  device_.set_cpu_cores(16);
  Prompt p = BuildPrompt(Inputs());
  const std::string s = All(p);
  EXPECT_NE(s.find("g++ -shared"), std::string::npos);
  EXPECT_NE(s.find("ctx->barrier(ctx)"), std::string::npos);
  EXPECT_NE(s.find("16 CPU cores"), std::string::npos);
  EXPECT_NE(s.find("```cpp"), std::string::npos);
  EXPECT_EQ(s.find("NVIDIA H200"), std::string::npos);
}

TEST(EstimateTokens, FourCharsPerToken) {
  EXPECT_EQ(EstimateTokens(""), 0);
  EXPECT_EQ(EstimateTokens("abc"), 1);
  EXPECT_EQ(EstimateTokens("abcd"), 1);
  EXPECT_EQ(EstimateTokens("abcde"), 2);
  EXPECT_EQ(EstimateTokens(std::string(4000, 'a')), 1000);
}

}  // namespace
}  // namespace pkforge::agent
