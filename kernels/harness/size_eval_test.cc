// Hidden shapes and the size ladder through the real worker (`pkforge-worker
// launch`, host backend, real rank processes; issue #17 item 5).
#include "kernels/harness/size_eval.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"
#include "kernels/harness/launch_test_util.h"
#include "kernels/harness/problem.h"

namespace pkforge::kernels {
namespace {

using testing::RunJudge;
using testing::Verdict;

Verdict Launch(const std::string& candidate, const std::string& extra) {
  const std::string cmd =
      fmt::format("{} launch --json --problem allreduce --backend host --world-size 2 --dtype f32 "
                  "--trials 2 --warmup 1 --iters 3 --timeout 60 {} {}/{}.so",
                  PKF_WORKER, extra, PKF_CANDIDATES, candidate);
  Verdict v = RunJudge(cmd, ::testing::TempDir() + "size_eval_stderr.txt");
  EXPECT_TRUE(v.parsed) << v.channel_error << "\n" << v.stderr_text;
  return v;
}

Dims EvaluatedDims(const v1::EvaluationResult& r) {
  return Dims(r.evaluated_dims().begin(), r.evaluated_dims().end());
}

TEST(HiddenShapes, HardCodedShapePassesOnThePromptShapeAndFailsOnHiddenShapes) {
  const Dims tiny = (**FindProblem("allreduce")).tiny;
  const Verdict plain = Launch("hardcoded_shape", "--size tiny");
  EXPECT_EQ(plain.result.status(), v1::EvaluationResult::OK) << plain.result.message();
  EXPECT_FALSE(plain.result.hidden_shapes());
  EXPECT_EQ(EvaluatedDims(plain.result), tiny);

  const Verdict hidden = Launch("hardcoded_shape", "--size tiny --hidden-shapes");
  EXPECT_EQ(hidden.result.status(), v1::EvaluationResult::WRONG_OUTPUT) << hidden.result.message();
  EXPECT_TRUE(hidden.result.hidden_shapes());
  EXPECT_EQ(hidden.result.size().preset(), "tiny");  // what was asked, not the secret draw
  EXPECT_NE(EvaluatedDims(hidden.result), tiny);
  EXPECT_TRUE((**FindProblem("allreduce")).validate(EvaluatedDims(hidden.result), 2).ok());
}

TEST(HiddenShapes, HonestCandidateIsOkOnHiddenShapes) {
  const Verdict v = Launch("naive_host_allreduce", "--size tiny --hidden-shapes");
  EXPECT_EQ(v.result.status(), v1::EvaluationResult::OK) << v.result.message();
  EXPECT_TRUE(v.result.hidden_shapes());
  EXPECT_NE(EvaluatedDims(v.result), (**FindProblem("allreduce")).tiny);
  EXPECT_TRUE(v.result.has_speedup());
}

// The family is usable for every problem: the honest naive host candidate of
// each is correct on hidden shapes around tiny (the reference and the checks
// hold away from the presets too), at an even and an odd world size.
TEST(HiddenShapes, EveryProblemsNaiveCandidateIsCorrectOnHiddenShapes) {
  for (const Problem* p : Problems()) {
    for (int w : {2, 3}) {
      if (w < p->min_world || w > p->max_world) continue;
      const std::string cmd = fmt::format(
          "{} launch --json --problem {} --backend host --world-size {} --size tiny --trials 2 "
          "--skip-timing --hidden-shapes --timeout 60 {}/naive_host_{}.so",
          PKF_WORKER, p->name, w, PKF_CANDIDATES, p->name);
      const Verdict v = RunJudge(cmd, ::testing::TempDir() + "size_eval_stderr.txt");
      ASSERT_TRUE(v.parsed) << p->name << ": " << v.channel_error << "\n" << v.stderr_text;
      EXPECT_EQ(v.result.status(), v1::EvaluationResult::OK)
          << p->name << " w=" << w << " at " << DimsToString(EvaluatedDims(v.result)) << ": "
          << v.result.message();
      EXPECT_TRUE(v.result.hidden_shapes());
    }
  }
}

TEST(SizeLadder, MultiSizeScoreIsTheGeometricMeanOfTheSpeedups) {
  const Verdict v = Launch("naive_host_allreduce", "--size tiny --sizes tiny,default");
  ASSERT_EQ(v.result.status(), v1::EvaluationResult::OK) << v.result.message();
  ASSERT_EQ(v.result.size_scores_size(), 2);
  EXPECT_EQ(v.result.size_scores(0).size(), "tiny");
  EXPECT_EQ(v.result.size_scores(1).size(), "default");
  EXPECT_EQ(v.result.size_scores(1).dims().at("M"), 1024);
  for (const auto& s : v.result.size_scores()) {
    EXPECT_EQ(s.status(), v1::EvaluationResult::OK);
    ASSERT_TRUE(s.has_speedup());
  }
  // The result is the requested size's.
  EXPECT_EQ(v.result.size().preset(), "tiny");
  EXPECT_DOUBLE_EQ(v.result.speedup(), v.result.size_scores(0).speedup());
  ASSERT_TRUE(v.result.has_multi_size_score());
  EXPECT_NEAR(v.result.multi_size_score(),
              std::sqrt(v.result.size_scores(0).speedup() * v.result.size_scores(1).speedup()),
              1e-9 * v.result.multi_size_score());
}

TEST(SizeLadder, FailureAtALadderSizeIsTheResult) {
  const Verdict v = Launch("hardcoded_shape", "--size tiny --sizes tiny,default");
  EXPECT_EQ(v.result.status(), v1::EvaluationResult::WRONG_OUTPUT);
  EXPECT_NE(v.result.message().find("at size default"), std::string::npos) << v.result.message();
  ASSERT_EQ(v.result.size_scores_size(), 2);
  EXPECT_EQ(v.result.size_scores(0).status(), v1::EvaluationResult::OK);
  EXPECT_EQ(v.result.size_scores(1).status(), v1::EvaluationResult::WRONG_OUTPUT);
  EXPECT_FALSE(v.result.has_multi_size_score());
}

TEST(SizeLadder, BadLadderIsRefusedNamingTheFlag) {
  const testing::Captured c = testing::RunCapture(
      fmt::format("{} launch --problem allreduce --world-size 2 --sizes tiny,huge {}/{}.so 2>&1",
                  PKF_WORKER, PKF_CANDIDATES, "naive_host_allreduce"));
  EXPECT_NE(c.output.find("--sizes"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("'huge'"), std::string::npos) << c.output;
}

}  // namespace
}  // namespace pkforge::kernels
