// The HTML job report (cli/report.h): structure (one row per evaluation, both
// plots, the best source), escaping of hostile text, and the line diff.
#include "cli/report.h"

#include <gtest/gtest.h>

#include <string>

namespace pkforge::cli {
namespace {

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1)) {
    ++n;
  }
  return n;
}

constexpr char kHostile[] =
    "int pkf_run() { return 0; }\n// </script><script>alert('x')</script>\n"
    "// <img src=x onerror=\"alert(1)\"> & \"quotes\"\n";

v1::Trajectory MakeTrajectory() {
  v1::Trajectory t;
  v1::Job* job = t.mutable_job();
  job->set_id("job_01JE000000000000000000000");
  job->set_state(v1::JOB_STATE_SUCCEEDED);
  job->set_stop_reason("wall budget <spent>");
  job->set_elapsed_ms(60000);
  job->set_best_speedup(1.8);
  job->set_best_evaluation_id("eval_3");
  job->set_best_candidate_sha256("c3");
  job->set_best_roofline_fraction(0.42);
  auto* spec = job->mutable_spec();
  spec->set_problem("allreduce");
  spec->set_backend(v1::BACKEND_CUDA);
  spec->set_world_size(8);
  spec->set_dtype(v1::DTYPE_BF16);
  spec->mutable_size()->set_preset("default");
  spec->mutable_agent()->set_kind(v1::AGENT_KIND_LLM);
  spec->mutable_agent()->mutable_llm()->set_model("model-<b>x</b>");
  spec->mutable_agent()->mutable_strategy()->set_kind(v1::STRATEGY_SEQUENTIAL);
  spec->mutable_budget()->set_wall_seconds(600);
  spec->set_label("lab\"el");
  auto* turn = t.add_turns();
  turn->set_id("turn_1");
  turn->set_index(0);
  turn->set_note("refine");
  auto* call = t.add_llm_calls();
  call->set_id("llm_1");
  call->set_turn_id("turn_1");
  call->set_model("m");
  call->set_reply("Here: </script><script>alert('reply')</script>");
  const char* sources[] = {"int pkf_run() { return 0; }\n", kHostile,
                           "int pkf_run() { return 1; }\n// faster\n"};
  const char* shas[] = {"c1", "c2", "c3"};
  for (int i = 0; i < 3; ++i) {
    auto* c = t.add_candidates();
    c->set_sha256(shas[i]);
    c->set_source(sources[i]);
  }
  struct {
    const char* id;
    const char* sha;
    v1::EvaluationResult::Status st;
    double speedup;
  } evs[] = {{"eval_1", "c1", v1::EvaluationResult::OK, 1.2},
             {"eval_2", "c2", v1::EvaluationResult::COMPILE_ERROR, 0},
             {"eval_3", "c3", v1::EvaluationResult::OK, 1.8},
             {"eval_4", "c3", v1::EvaluationResult::WRONG_OUTPUT, 0}};
  int i = 0;
  for (const auto& e : evs) {
    auto* r = t.add_evaluations();
    r->set_id(e.id);
    r->set_turn_id("turn_1");
    r->set_candidate_sha256(e.sha);
    r->set_status(e.st);
    if (e.speedup > 0) r->set_speedup(e.speedup);
    r->set_elapsed_ms(10000 * ++i);
    r->set_active_s(8.0 * i);
    r->mutable_stages()->set_compile_ms(1234.5);
    r->mutable_stages()->set_run_ms(56.7);
    auto* res = r->mutable_result();
    res->set_status(e.st);
    res->set_message(e.st == v1::EvaluationResult::COMPILE_ERROR ? "error: <expected ';'>" : "ok");
    if (e.st == v1::EvaluationResult::COMPILE_ERROR) {
      res->mutable_compile()->set_compiler("nvcc");
      res->mutable_compile()->set_output("k.cu:2: error: </pre><script>bad()</script>");
    }
    if (e.speedup > 0) {
      res->set_speedup(e.speedup);
      res->mutable_candidate()->set_median_us(100 / e.speedup);
      res->mutable_reference()->set_median_us(100);
      res->mutable_roofline()->set_candidate_fraction(0.42);
      res->mutable_profile()->set_tool("ncu");
      res->mutable_profile()->add_kernels()->set_name("allreduce_kernel<bf16>");
    }
  }
  return t;
}

TEST(ReportTest, OneRowPerEvaluationBothPlotsAndTheBestSource) {
  auto html = RenderJobReport(MakeTrajectory());
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(html->rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(Count(*html, "<tr class=\"eval"), 4u);
  EXPECT_EQ(Count(*html, "<tr class=\"detail\">"), 4u);
  EXPECT_EQ(Count(*html, "<svg class=\"plot\""), 3u);  // wall, active, % of roofline
  EXPECT_EQ(Count(*html, "</svg>"), 3u);
  EXPECT_EQ(Count(*html, "<path class=\"best\""), 2u);  // a step line on each axis
  EXPECT_NE(html->find("Speedup over wall-clock time"), std::string::npos);
  EXPECT_NE(html->find("Speedup over active time"), std::string::npos);
  EXPECT_NE(html->find("<tr class=\"eval best\" id=\"eval_3\">"), std::string::npos);
  EXPECT_NE(html->find("1.800x"), std::string::npos);
  EXPECT_NE(html->find("42.0%"), std::string::npos);
  EXPECT_NE(html->find("id=\"best-source\""), std::string::npos);
  EXPECT_NE(html->find("<span>// faster</span>"), std::string::npos);
  // Header fields.
  for (const char* s : {"allreduce", "cuda", "bf16", "default", "llm", "sequential", "600 s wall",
                        "succeeded", "model-&lt;b&gt;x&lt;/b&gt;"}) {
    EXPECT_NE(html->find(s), std::string::npos) << s;
  }
  // Feedback, compiler output (open for the compile error), profiler, LLM reply.
  EXPECT_NE(html->find("feedback given to the agent"), std::string::npos);
  EXPECT_NE(html->find("<details open><summary>compiler output (nvcc)"), std::string::npos);
  EXPECT_NE(html->find("profiler (ncu)"), std::string::npos);
  EXPECT_NE(html->find("allreduce_kernel&lt;bf16&gt;"), std::string::npos);
  EXPECT_EQ(Count(*html, "<summary>LLM reply"), 1u);  // once per turn
  // Diffs against the previous candidate; the repeated candidate says so.
  EXPECT_EQ(Count(*html, "diff against the previous candidate"), 2u);
  EXPECT_NE(html->find("same candidate as the previous evaluation"), std::string::npos);
  EXPECT_NE(html->find("<span class=\"a\">+int pkf_run() { return 1; }</span>"),
            std::string::npos);
}

// Issue #18 item 5: a rung at other settings is drawn hollow and labelled,
// never on the best line; the final re-measurement is the header's result and
// a labelled row, not a point.
TEST(ReportTest, RungsAreApartAndTheFinalMeasurementIsTheResult) {
  v1::Trajectory t = MakeTrajectory();
  auto* rung = t.add_evaluations();
  rung->set_id("eval_rung");
  rung->set_candidate_sha256("c1");
  rung->set_status(v1::EvaluationResult::OK);
  rung->set_speedup(9.5);  // faster than the best: must not move the line
  rung->set_elapsed_ms(45000);
  rung->set_timed_iters(10);
  rung->set_other_settings(true);
  auto* fin = t.add_evaluations();
  fin->set_id("eval_final");
  fin->set_candidate_sha256("c3");
  fin->set_status(v1::EvaluationResult::OK);
  fin->set_speedup(1.7);
  fin->set_elapsed_ms(61000);
  fin->set_final_measurement(true);
  v1::Job* job = t.mutable_job();
  job->set_final_speedup(1.7);
  job->set_final_evaluation_id("eval_final");
  job->set_final_candidate_sha256("c3");
  job->set_other_settings_evaluations(1);
  job->set_other_settings_best_speedup(9.5);
  auto html = RenderJobReport(t);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(Count(*html, "<tr class=\"eval"), 6u);  // every evaluation has its row
  EXPECT_NE(html->find("<tr class=\"eval other\" id=\"eval_rung\">"), std::string::npos);
  EXPECT_NE(html->find("(other settings: 10 timed iterations)"), std::string::npos);
  EXPECT_NE(html->find("<tr class=\"eval final\" id=\"eval_final\">"), std::string::npos);
  EXPECT_NE(html->find("(final re-measurement)"), std::string::npos);
  EXPECT_NE(html->find("<b>result (fresh re-measurement)</b>1.700x"), std::string::npos);
  EXPECT_NE(html->find("1 evaluation (search rungs), best 9.500x: not on the best line"),
            std::string::npos);
  // Hollow on both speedup plots; the final measurement is no point at all.
  EXPECT_EQ(Count(*html, "<circle class=\"pt other\""), 2u);
  EXPECT_EQ(Count(*html, "#6 "), 0u);
  EXPECT_NE(html->find("#5 9.5x at 45.0 s (other settings: not on the best line)"),
            std::string::npos);
}

TEST(ReportTest, HostileTextIsEscapedAndThePageHasNoScript) {
  auto html = RenderJobReport(MakeTrajectory());
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(html->find("<script"), std::string::npos);
  EXPECT_EQ(html->find("</script"), std::string::npos);
  EXPECT_EQ(html->find("<img"), std::string::npos);
  EXPECT_EQ(html->find("</pre><script"), std::string::npos);
  EXPECT_NE(html->find("&lt;/script&gt;&lt;script&gt;alert(&#39;x&#39;)"), std::string::npos);
  EXPECT_NE(html->find("&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp;"), std::string::npos);
  EXPECT_NE(html->find("wall budget &lt;spent&gt;"), std::string::npos);
  EXPECT_NE(html->find("lab&quot;el"), std::string::npos);
}

TEST(ReportTest, NoJobIsAnError) {
  EXPECT_FALSE(RenderJobReport(v1::Trajectory()).ok());
}

TEST(ReportTest, NeverCorrectJobHasPlotsButNoStepLine) {
  v1::Trajectory t = MakeTrajectory();
  t.mutable_job()->clear_best_speedup();
  t.mutable_job()->clear_best_candidate_sha256();
  t.mutable_job()->clear_best_evaluation_id();
  for (auto& e : *t.mutable_evaluations()) {
    e.set_status(v1::EvaluationResult::RUNTIME_ERROR);
    e.clear_speedup();
  }
  auto html = RenderJobReport(t);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(Count(*html, "<svg class=\"plot\""), 3u);
  EXPECT_EQ(Count(*html, "<path class=\"best\""), 0u);
  EXPECT_NE(html->find("% of roofline (not measured)"), std::string::npos);
  EXPECT_EQ(Count(*html, "<path class=\"fail\""), 8u);  // 4 per plot
  EXPECT_NE(html->find("No correct candidate."), std::string::npos);
}

TEST(ReportTest, RooflineAboveTheCeilingIsSuspectNotANumber) {
  v1::Trajectory t = MakeTrajectory();
  t.mutable_job()->set_best_roofline_fraction(1.5);
  t.mutable_evaluations(2)->mutable_result()->mutable_roofline()->set_candidate_fraction(1.5);
  auto html = RenderJobReport(t);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(html->find(">150.0%"), std::string::npos);
  EXPECT_EQ(Count(*html, ">suspect</span>"), 2u);  // header and row 3
}

TEST(ReportTest, NonLlmAgentsAreNotSaidToGetFeedback) {
  v1::Trajectory t = MakeTrajectory();
  t.mutable_job()->mutable_spec()->mutable_agent()->set_kind(v1::AGENT_KIND_SEARCH);
  auto html = RenderJobReport(t);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(html->find("feedback given to the agent"), std::string::npos);
  EXPECT_EQ(Count(*html, "evaluation report (as an LLM agent is given it)"), 4u);
}

TEST(HtmlEscapeTest, EscapesMarkupAndReplacesInvalidUtf8) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(HtmlEscape("caf\xC3\xA9 \xE2\x86\x92"), "caf\xC3\xA9 \xE2\x86\x92");  // valid kept
  EXPECT_EQ(HtmlEscape("a\xFF" "b"), "a\xEF\xBF\xBD" "b");                        // bad byte
  EXPECT_EQ(HtmlEscape("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                 // overlong '/'
  EXPECT_EQ(HtmlEscape("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(HtmlEscape(std::string("x\0y\x1b", 4)), "x\xEF\xBF\xBDy\xEF\xBF\xBD");
  EXPECT_EQ(HtmlEscape("a\tb\nc"), "a\tb\nc");
}

TEST(UnifiedDiffTest, EqualInputsGiveNothing) { EXPECT_EQ(UnifiedDiff("a\nb\n", "a\nb\n", "x", "y"), ""); }

TEST(UnifiedDiffTest, OneChangedLineWithContext) {
  const std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  const std::string b = "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n";
  EXPECT_EQ(UnifiedDiff(a, b, "a", "b"),
            "--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n");
}

TEST(UnifiedDiffTest, DistantChangesMakeTwoHunksNearOnesOne) {
  std::string a, b;
  for (int i = 1; i <= 20; ++i) {
    a += std::to_string(i) + "\n";
    b += (i == 2 || i == 18 ? "x" : std::to_string(i)) + "\n";
  }
  const std::string d = UnifiedDiff(a, b, "a", "b");
  EXPECT_EQ(Count(d, "@@ -"), 2u) << d;
  EXPECT_NE(d.find("@@ -1,5 +1,5 @@\n 1\n-2\n+x\n 3\n 4\n 5\n"), std::string::npos) << d;
  EXPECT_NE(d.find("@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+x\n 19\n 20\n"), std::string::npos)
      << d;
  // Changes at lines 2 and 5: 2 unchanged lines apart (<= 2 * context): one hunk.
  std::string near;
  for (int i = 1; i <= 20; ++i) near += (i == 2 || i == 5 ? "y" : std::to_string(i)) + "\n";
  const std::string d2 = UnifiedDiff(a, near, "a", "b");
  EXPECT_EQ(Count(d2, "@@ -"), 1u) << d2;
  EXPECT_NE(d2.find("@@ -1,8 +1,8 @@\n"), std::string::npos) << d2;
}

TEST(UnifiedDiffTest, InsertionsDeletionsAndLcsChoice) {
  // LCS keeps "a c e"; b and d are replaced/removed, f added.
  EXPECT_EQ(UnifiedDiff("a\nb\nc\nd\ne\n", "a\nc\ne\nf\n", "x", "y", 1),
            "--- x\n+++ y\n@@ -1,5 +1,4 @@\n a\n-b\n c\n-d\n e\n+f\n");
  // From empty and to empty.
  EXPECT_EQ(UnifiedDiff("", "a\n", "x", "y"), "--- x\n+++ y\n@@ -0,0 +1,1 @@\n+a\n");
  EXPECT_EQ(UnifiedDiff("a\n", "", "x", "y"), "--- x\n+++ y\n@@ -1,1 +0,0 @@\n-a\n");
}

TEST(UnifiedDiffTest, HugeMiddleFallsBackToReplaceAll) {
  const std::string d = UnifiedDiff("k\na\nb\nk2\n", "k\nc\nd\nk2\n", "x", "y", 0, /*max_cells=*/4);
  EXPECT_EQ(d, "--- x\n+++ y\n@@ -2,2 +2,2 @@\n-a\n-b\n+c\n+d\n");
}

}  // namespace
}  // namespace pkforge::cli
