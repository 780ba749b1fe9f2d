#include "storage/plateau.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pkforge::storage {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

EvalPoint Correct(double t, double speedup) { return {t, t, true, speedup}; }
EvalPoint Wrong(double t) { return {t, t, false, 0}; }

JobTrajectory Job(std::string id, double duration, std::vector<EvalPoint> points,
                  std::string model = "m") {
  JobTrajectory j;
  j.job_id = std::move(id);
  j.problem = "allreduce";
  j.model = std::move(model);
  j.strategy = "sequential";
  j.agent_kind = "llm";
  j.duration_s = duration;
  j.points = std::move(points);
  return j;
}

// A job whose steps are exactly `steps` (one correct point per step).
JobTrajectory StepJob(std::string id, double duration, const std::vector<Step>& steps,
                      std::string model = "m") {
  std::vector<EvalPoint> points;
  for (const Step& s : steps) points.push_back(Correct(s.t, s.best));
  return Job(std::move(id), duration, std::move(points), std::move(model));
}

BestSoFarCurve Curve(const JobTrajectory& job, TimeAxis axis = TimeAxis::kElapsed) {
  absl::StatusOr<BestSoFarCurve> c = ComputeBestSoFar(job, axis);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : BestSoFarCurve{};
}

// ------------------------------------------------------------------ validation

void ExpectInvalid(const JobTrajectory& job, const std::string& fragment) {
  absl::Status s = ValidateTrajectory(job);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(fragment));
  EXPECT_THAT(std::string(s.message()), HasSubstr("'" + job.job_id + "'"));
  EXPECT_EQ(ComputeBestSoFar(job, TimeAxis::kElapsed).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PlateauValidateTest, AcceptsGoodInputAndIgnoresSpeedupOfWrongPoints) {
  JobTrajectory j = Job("j", 10, {Correct(1, 1.5), {2, 1, false, kNaN}, Wrong(3)});
  EXPECT_TRUE(ValidateTrajectory(j).ok()) << ValidateTrajectory(j);
  EXPECT_TRUE(ValidateTrajectory(Job("empty", 0, {})).ok());
}

TEST(PlateauValidateTest, RejectsBadTimes) {
  ExpectInvalid(Job("neg", 10, {Correct(1, 1), Wrong(2), {-1, -1, false, 0}}), "point 2");
  ExpectInvalid(Job("neg", 10, {{-0.5, -0.5, true, 1.0}}), "elapsed_s must be finite and >= 0");
  ExpectInvalid(Job("nan", 10, {{kNaN, 1, true, 1.0}}), "elapsed_s");
  ExpectInvalid(Job("inf", 10, {{kInf, 1, true, 1.0}}), "elapsed_s");
  ExpectInvalid(Job("active", 10, {{5, -1, false, 0}}), "active_s must be finite");
  ExpectInvalid(Job("active", 10, {{5, kNaN, false, 0}}), "active_s must be finite");
  ExpectInvalid(Job("active", 10, {Correct(1, 1), {5, 6, false, 0}}),
                "point 1: active_s 6 exceeds elapsed_s 5");
  ExpectInvalid(Job("short", 10, {Correct(1, 1), Correct(11, 2)}),
                "point 1: elapsed_s 11 is after the run's end (duration_s 10)");
  ExpectInvalid(Job("dur", -1, {}), "duration_s");
  ExpectInvalid(Job("dur", kNaN, {}), "duration_s");
}

TEST(PlateauValidateTest, RejectsBadSpeedupsOnCorrectPoints) {
  ExpectInvalid(Job("s", 10, {Correct(1, 1), Correct(2, kNaN)}),
                "point 1: correct point has speedup nan");
  ExpectInvalid(Job("s", 10, {Correct(2, kInf)}), "speedup inf");
  ExpectInvalid(Job("s", 10, {Correct(2, 0)}), "speedup 0");
  ExpectInvalid(Job("s", 10, {Correct(2, -1.5)}), "speedup -1.5");
}

TEST(PlateauValidateTest, RejectsEmptyJobId) {
  EXPECT_EQ(ValidateTrajectory(Job("", 1, {})).code(), absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------- best so far

TEST(PlateauCurveTest, HeaderExampleStepsTiesAndSameInstant) {
  // The example in plateau.h: a tie (20, 1.2) and a worse point make no step,
  // two points at t = 40 make one step with the better of them.
  JobTrajectory j = Job("j", 50,
                        {Wrong(5), Correct(10, 1.2), Correct(20, 1.2), Correct(30, 1.0),
                         Correct(40, 1.8), Correct(40, 1.5)});
  BestSoFarCurve c = Curve(j);
  EXPECT_THAT(c.steps, ElementsAre(Step{10, 1.2}, Step{40, 1.8}));
  EXPECT_EQ(c.end_s, 50);
  EXPECT_EQ(c.evaluations, 6);
  EXPECT_EQ(c.correct_evaluations, 5);
  EXPECT_EQ(TimeToFirstCorrect(c), 10);
  EXPECT_EQ(c.Final(), 1.8);
  EXPECT_THAT(TimeToFraction(c, 0.5), Optional(10.0));
  EXPECT_THAT(TimeToFraction(c, 0.9), Optional(40.0));
  EXPECT_THAT(TimeToFraction(c, 1.0), Optional(40.0));

  // The better point first at the same instant gives the same single step.
  j.points = {Correct(40, 1.5), Correct(10, 1.2), Correct(40, 1.8)};
  EXPECT_THAT(Curve(j).steps, ElementsAre(Step{10, 1.2}, Step{40, 1.8}));
}

TEST(PlateauCurveTest, UnsortedPointsGiveTheSameCurve) {
  JobTrajectory sorted = Job("j", 100, {Correct(10, 1), Correct(20, 2), Correct(30, 3)});
  JobTrajectory shuffled = Job("j", 100, {Correct(30, 3), Correct(10, 1), Correct(20, 2)});
  EXPECT_EQ(Curve(sorted).steps, Curve(shuffled).steps);
  EXPECT_THAT(Curve(shuffled).steps, ElementsAre(Step{10, 1}, Step{20, 2}, Step{30, 3}));
}

TEST(PlateauCurveTest, AtIsUndefinedBeforeFirstCorrectAndInclusive) {
  BestSoFarCurve c = Curve(Job("j", 100, {Wrong(1), Correct(10, 1.5), Correct(20, 2.5)}));
  EXPECT_EQ(c.At(0), std::nullopt);
  EXPECT_EQ(c.At(9.999), std::nullopt);
  EXPECT_THAT(c.At(10), Optional(1.5));
  EXPECT_THAT(c.At(19.9), Optional(1.5));
  EXPECT_THAT(c.At(20), Optional(2.5));
  EXPECT_THAT(c.At(1000), Optional(2.5));  // past the end: the final best
}

TEST(PlateauCurveTest, NeverCorrectJobHasNothing) {
  BestSoFarCurve c = Curve(Job("j", 100, {Wrong(1), Wrong(50), {60, 60, false, 3.0}}));
  EXPECT_TRUE(c.steps.empty());
  EXPECT_EQ(c.evaluations, 3);
  EXPECT_EQ(c.correct_evaluations, 0);
  EXPECT_EQ(c.Final(), std::nullopt);
  EXPECT_EQ(TimeToFirstCorrect(c), std::nullopt);
  EXPECT_EQ(TimeToFraction(c, 0.5), std::nullopt);
  EXPECT_EQ(PlateauOnset(c, {}), std::nullopt);
  OnsetOptions windowed;
  windowed.window_s = 10;
  EXPECT_EQ(PlateauOnset(c, windowed), std::nullopt);
}

TEST(PlateauCurveTest, TimeToFractionList) {
  BestSoFarCurve c = Curve(StepJob("j", 200, {{10, 1.0}, {20, 1.5}, {40, 1.9}, {100, 2.0}}));
  EXPECT_THAT(TimeToFraction(c, 0.5), Optional(10.0));    // 1.0 >= 1.0
  EXPECT_THAT(TimeToFraction(c, 0.75), Optional(20.0));   // 1.5 >= 1.5
  EXPECT_THAT(TimeToFraction(c, 0.9), Optional(40.0));    // 1.9 >= 1.8
  EXPECT_THAT(TimeToFraction(c, 0.99), Optional(100.0));  // 1.9 < 1.98
  EXPECT_EQ(TimeToFraction(c, 0), std::nullopt);
  EXPECT_EQ(TimeToFraction(c, 1.5), std::nullopt);
}

// -------------------------------------------------------------- plateau onset

TEST(PlateauOnsetTest, HeaderExampleWithoutWindow) {
  BestSoFarCurve c = Curve(StepJob("j", 100, {{10, 1.0}, {20, 1.5}, {30, 1.505}}));
  EXPECT_THAT(PlateauOnset(c, {}), Optional(20.0));
  OnsetOptions loose;
  loose.epsilon = 0.6;  // 1.505 < 1.0 * 1.6
  EXPECT_THAT(PlateauOnset(c, loose), Optional(10.0));
  OnsetOptions strict;
  strict.epsilon = 0.001;  // 1.505 >= 1.5015: only the last step qualifies
  EXPECT_THAT(PlateauOnset(c, strict), Optional(30.0));
}

TEST(PlateauOnsetTest, RunThatKeepsImprovingToItsEndHasNoPlateau) {
  BestSoFarCurve c = Curve(StepJob("j", 100, {{10, 1.0}, {50, 1.5}, {95, 2.0}}));
  EXPECT_EQ(PlateauOnset(c, {}), std::nullopt);  // tail 5 < 10% of 100
  OnsetOptions short_tail;
  short_tail.min_tail_s = 5;
  EXPECT_THAT(PlateauOnset(c, short_tail), Optional(95.0));
  OnsetOptions no_tail_rule;
  no_tail_rule.min_tail_fraction = 0;
  EXPECT_THAT(PlateauOnset(c, no_tail_rule), Optional(95.0));
  // Improving steadily by more than epsilon every step, right up to the end.
  std::vector<Step> steps;
  for (int i = 1; i <= 100; ++i) steps.push_back({static_cast<double>(i), 1.0 + 0.05 * i});
  EXPECT_EQ(PlateauOnset(Curve(StepJob("k", 100, steps)), {}), std::nullopt);
}

TEST(PlateauOnsetTest, SingleCorrectPointEarlyIsAPlateau) {
  BestSoFarCurve c = Curve(Job("j", 100, {Wrong(1), Correct(5, 1.3), Wrong(50), Correct(60, 1.3)}));
  EXPECT_THAT(PlateauOnset(c, {}), Optional(5.0));
}

TEST(PlateauOnsetTest, EpsilonZeroMeansNoImprovementAtAll) {
  BestSoFarCurve c = Curve(StepJob("j", 100, {{10, 1.0}, {20, 1.0001}}));
  OnsetOptions zero;
  zero.epsilon = 0;
  EXPECT_THAT(PlateauOnset(c, zero), Optional(20.0));
  EXPECT_THAT(PlateauOnset(c, {}), Optional(10.0));  // 0.01% < 1%
}

TEST(PlateauOnsetTest, WindowVariant) {
  BestSoFarCurve c = Curve(StepJob("j", 200, {{10, 1.0}, {20, 1.5}, {100, 3.0}}));
  OnsetOptions w;
  w.window_s = 50;
  EXPECT_THAT(PlateauOnset(c, w), Optional(20.0));    // best(70) = 1.5: stalled for 50 s
  EXPECT_THAT(PlateauOnset(c, {}), Optional(100.0));  // without a window: the final plateau
  w.window_s = 85;  // best(105) = 3.0 from t = 20; from t = 100 the window ends at 185
  EXPECT_THAT(PlateauOnset(c, w), Optional(100.0));
  w.window_s = 101;  // 100 + 101 > 200 and earlier windows see the jump to 3.0
  EXPECT_EQ(PlateauOnset(c, w), std::nullopt);
  w.window_s = 180;  // a window ending exactly at the end counts (t + W <= end)
  EXPECT_EQ(PlateauOnset(c, w), std::nullopt);  // from 20: best(200) = 3.0
  BestSoFarCurve flat = Curve(StepJob("f", 200, {{20, 2.0}}));
  EXPECT_THAT(PlateauOnset(flat, w), Optional(20.0));  // 20 + 180 == 200
  w.window_s = 181;
  EXPECT_EQ(PlateauOnset(flat, w), std::nullopt);
}

TEST(PlateauOnsetTest, OptionsAreValidated) {
  OnsetOptions o;
  EXPECT_TRUE(ValidateOnsetOptions(o).ok());
  o.epsilon = -0.1;
  EXPECT_EQ(ValidateOnsetOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.epsilon = kNaN;
  EXPECT_EQ(ValidateOnsetOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.window_s = 0;
  EXPECT_EQ(ValidateOnsetOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.min_tail_fraction = 1.5;
  EXPECT_EQ(ValidateOnsetOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.min_tail_s = -1;
  EXPECT_EQ(ValidateOnsetOptions(o).code(), absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------- active axis

TEST(PlateauActiveAxisTest, ActiveClockMovesStepsAndEnd) {
  // Queueing: 0 s before the first result, 10 s before the second, 25 s in all.
  JobTrajectory j = Job("j", 100, {{50, 25, true, 2.01}, {10, 10, true, 1.0}, {30, 20, true, 2.0}});
  BestSoFarCurve elapsed = Curve(j, TimeAxis::kElapsed);
  BestSoFarCurve active = Curve(j, TimeAxis::kActive);
  EXPECT_THAT(elapsed.steps, ElementsAre(Step{10, 1.0}, Step{30, 2.0}, Step{50, 2.01}));
  EXPECT_THAT(active.steps, ElementsAre(Step{10, 1.0}, Step{20, 2.0}, Step{25, 2.01}));
  EXPECT_EQ(elapsed.end_s, 100);
  EXPECT_EQ(active.end_s, 75);  // 100 - 25 s of queueing
  EXPECT_THAT(PlateauOnset(elapsed, {}), Optional(30.0));
  EXPECT_THAT(PlateauOnset(active, {}), Optional(20.0));
  EXPECT_THAT(TimeToFraction(active, 0.9), Optional(20.0));
}

TEST(PlateauActiveAxisTest, ActiveOrderMayDifferFromElapsedOrder) {
  // Overlapping evaluations: the one that arrived later queued much longer.
  JobTrajectory j = Job("j", 100, {{40, 35, true, 1.5}, {60, 20, true, 1.2}});
  EXPECT_THAT(Curve(j, TimeAxis::kElapsed).steps, ElementsAre(Step{40, 1.5}));
  EXPECT_THAT(Curve(j, TimeAxis::kActive).steps, ElementsAre(Step{20, 1.2}, Step{35, 1.5}));
  // End: 100 - max queueing (40) = 60, not before any active point.
  EXPECT_EQ(Curve(j, TimeAxis::kActive).end_s, 60);
}

TEST(PlateauActiveAxisTest, Names) {
  EXPECT_EQ(TimeAxisName(TimeAxis::kActive), "active");
  EXPECT_EQ(*ParseTimeAxis("elapsed"), TimeAxis::kElapsed);
  EXPECT_EQ(ParseTimeAxis("wall").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseGroupKey("agent_kind"), GroupKey::kAgentKind);
  EXPECT_EQ(GroupKeyName(GroupKey::kLabel), "label");
  EXPECT_EQ(ParseGroupKey("colour").status().code(), absl::StatusCode::kInvalidArgument);
}

// -------------------------------------------------------------- set analyses

// A: 0.8 at 10, 1.6 at 30 (ends 100); B: 1.2 at 20 (ends 50); C: never
// correct (ends 100); D: 2.5 at 5 (ends 100).
std::vector<JobTrajectory> FourJobs() {
  return {StepJob("A", 100, {{10, 0.8}, {30, 1.6}}), StepJob("B", 50, {{20, 1.2}}),
          Job("C", 100, {Wrong(10), Wrong(90)}), StepJob("D", 100, {{5, 2.5}})};
}

std::vector<BestSoFarCurve> Curves(const std::vector<JobTrajectory>& jobs) {
  std::vector<BestSoFarCurve> out;
  for (const JobTrajectory& j : jobs) out.push_back(Curve(j));
  return out;
}

std::vector<double> Shares(const FastPCurve& c) {
  std::vector<double> out;
  for (const FastPPoint& p : c.points) out.push_back(p.share);
  return out;
}

TEST(PlateauSetTest, FastPOnAHandBuiltSet) {
  std::vector<FastPCurve> f =
      ComputeFastP(Curves(FourJobs()), {0, 1.0, 1.5, 2.0}, {0, 5, 10, 25, 40, 100});
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].p, 0);
  EXPECT_THAT(Shares(f[0]), ElementsAre(0, 0.25, 0.5, 0.75, 0.75, 0.75));  // correct at all
  EXPECT_THAT(Shares(f[1]), ElementsAre(0, 0.25, 0.25, 0.5, 0.75, 0.75));
  EXPECT_THAT(Shares(f[2]), ElementsAre(0, 0.25, 0.25, 0.25, 0.5, 0.5));
  EXPECT_THAT(Shares(f[3]), ElementsAre(0, 0.25, 0.25, 0.25, 0.25, 0.25));
  EXPECT_EQ(f[0].points[4].jobs_running, 4);  // t = 40
  EXPECT_EQ(f[0].points[5].jobs_running, 3);  // t = 100: B ended at 50
  // Strictly faster: a job at exactly p does not count.
  std::vector<FastPCurve> exact = ComputeFastP(Curves(FourJobs()), {1.2}, {25});
  EXPECT_THAT(Shares(exact[0]), ElementsAre(0.25));  // D only; B is at exactly 1.2
  EXPECT_THAT(Shares(ComputeFastP({}, {0}, {1})[0]), ElementsAre(0));
}

TEST(PlateauSetTest, BudgetTruncation) {
  std::vector<BestSoFarCurve> curves = Curves(FourJobs());
  TruncationSummary s = SummarizeBudget(curves, 25);  // A 0.8, B 1.2, D 2.5
  EXPECT_EQ(s.budget_s, 25);
  EXPECT_EQ(s.jobs, 4);
  EXPECT_EQ(s.jobs_correct, 3);
  EXPECT_DOUBLE_EQ(s.share_correct, 0.75);
  EXPECT_EQ(s.jobs_ended_before, 0);
  EXPECT_DOUBLE_EQ(*s.mean_best, 1.5);
  EXPECT_DOUBLE_EQ(*s.median_best, 1.2);
  EXPECT_DOUBLE_EQ(*s.p10_best, 0.88);
  EXPECT_DOUBLE_EQ(*s.p90_best, 2.24);
  EXPECT_NEAR(*s.geomean_best, std::cbrt(0.8 * 1.2 * 2.5), 1e-12);

  s = SummarizeBudget(curves, 60);  // A 1.6, B 1.2 (ended at 50), D 2.5
  EXPECT_EQ(s.jobs_ended_before, 1);
  EXPECT_DOUBLE_EQ(*s.median_best, 1.6);
  EXPECT_DOUBLE_EQ(*s.mean_best, (1.6 + 1.2 + 2.5) / 3);

  s = SummarizeBudget(curves, 1);
  EXPECT_EQ(s.jobs_correct, 0);
  EXPECT_EQ(s.share_correct, 0);
  EXPECT_EQ(s.median_best, std::nullopt);
  EXPECT_EQ(s.geomean_best, std::nullopt);
  EXPECT_EQ(SummarizeBudget({}, 10).share_correct, 0);
}

TEST(PlateauSetTest, Quantiles) {
  EXPECT_EQ(Quantile({}, 0.5), std::nullopt);
  EXPECT_THAT(Quantile({3}, 0.9), Optional(3.0));
  EXPECT_THAT(Quantile({2, 1}, 0.5), Optional(1.5));
  EXPECT_THAT(Quantile({4, 1, 2, 3}, 0.5), Optional(2.5));
  EXPECT_THAT(Quantile({0, 10}, 0.1), Optional(1.0));
  EXPECT_THAT(Quantile({0, 10, 20}, 1.0), Optional(20.0));
}

TEST(PlateauSetTest, MedianBandCountsMissingAsZero) {
  // J1: 2.0 from 10 (ends 100); J2: 1.0 at 20, 3.0 at 50 (ends 60); J3 never.
  std::vector<BestSoFarCurve> curves =
      Curves({StepJob("J1", 100, {{10, 2.0}}), StepJob("J2", 60, {{20, 1.0}, {50, 3.0}}),
              Job("J3", 80, {Wrong(40)})});
  std::vector<BandPoint> band = ComputeMedianBand(curves, {});
  std::vector<double> ts, med, p10, p90;
  std::vector<int> correct, running;
  for (const BandPoint& p : band) {
    ts.push_back(p.t);
    med.push_back(p.median);
    p10.push_back(p.p10);
    p90.push_back(p.p90);
    correct.push_back(p.jobs_correct);
    running.push_back(p.jobs_running);
  }
  // 0, every step, every member's end.
  EXPECT_THAT(ts, ElementsAre(0, 10, 20, 50, 60, 80, 100));
  // t=10: {0, 0, 2}; t=20: {0, 1, 2}; from t=50: {0, 2, 3}.
  EXPECT_THAT(med, ElementsAre(0, 0, 1, 2, 2, 2, 2));
  const auto near = [](double v) { return testing::DoubleNear(v, 1e-12); };
  EXPECT_THAT(p10, ElementsAre(0, 0, near(0.2), near(0.4), near(0.4), near(0.4), near(0.4)));
  EXPECT_THAT(p90,
              ElementsAre(0, near(1.6), near(1.8), near(2.8), near(2.8), near(2.8), near(2.8)));
  EXPECT_THAT(correct, ElementsAre(0, 1, 2, 2, 2, 2, 2));
  EXPECT_THAT(running, ElementsAre(3, 3, 3, 3, 3, 2, 1));

  // Extra times inside [0, max end] are added; others are not.
  std::vector<BandPoint> with_grid = ComputeMedianBand(curves, {5, 200, 100});
  ASSERT_EQ(with_grid.size(), 8u);
  EXPECT_EQ(with_grid[1].t, 5);
  EXPECT_EQ(with_grid[1].median, 0);
  EXPECT_TRUE(ComputeMedianBand({}, {1, 2}).empty());
}

// ------------------------------------------------------------------- report

TEST(PlateauReportTest, GroupsByKeysWithSummaries) {
  std::vector<JobTrajectory> jobs = {
      StepJob("a1", 100, {{10, 1.0}, {20, 2.0}}, "m1"),  // onset 20
      StepJob("a2", 100, {{30, 4.0}}, "m1"),             // onset 30
      Job("a3", 100, {Wrong(50)}, "m1"),                 // never correct
      StepJob("b1", 100, {{5, 1.5}, {99, 3.0}}, "m2"),   // no plateau (tail 1)
      StepJob("c1", 40, {{8, 1.1}}, ""),                 // empty model
  };
  PlateauOptions o;
  o.group_by = {GroupKey::kModel};
  o.budgets_s = {25, 1000};
  absl::StatusOr<PlateauReport> r = BuildPlateauReport(jobs, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->jobs.size(), 5u);
  EXPECT_EQ(r->jobs[0].job_id, "a1");
  EXPECT_THAT(r->jobs[0].plateau_onset_s, Optional(20.0));
  EXPECT_THAT(r->jobs[0].best_at_onset, Optional(2.0));
  EXPECT_THAT(r->jobs[0].time_to_fraction_s,
              ElementsAre(Optional(10.0), Optional(20.0), Optional(20.0)));
  EXPECT_EQ(r->jobs[2].final_best, std::nullopt);
  EXPECT_EQ(r->jobs[3].plateau_onset_s, std::nullopt);

  // Auto grid: 50 points from 0 to the longest run.
  ASSERT_EQ(r->options.time_grid.size(), 50u);
  EXPECT_EQ(r->options.time_grid.front(), 0);
  EXPECT_EQ(r->options.time_grid.back(), 100);

  // Groups sorted by key value: "" ("(none)") < "m1" < "m2".
  ASSERT_EQ(r->groups.size(), 3u);
  EXPECT_EQ(r->groups[0].name, "(none)");
  EXPECT_THAT(r->groups[0].key_values, ElementsAre(""));
  const GroupSummary& m1 = r->groups[1];
  EXPECT_EQ(m1.name, "m1");
  EXPECT_THAT(m1.job_indices, ElementsAre(0, 1, 2));
  EXPECT_EQ(m1.jobs, 3);
  EXPECT_EQ(m1.jobs_correct, 2);
  EXPECT_DOUBLE_EQ(m1.share_correct, 2.0 / 3);
  EXPECT_EQ(m1.jobs_with_plateau, 2);
  EXPECT_THAT(m1.median_final_best, Optional(3.0));        // of {2, 4}
  EXPECT_THAT(m1.median_plateau_onset_s, Optional(25.0));  // of {20, 30}
  EXPECT_THAT(m1.median_first_correct_s, Optional(20.0));  // of {10, 30}
  // Median across {a1, a2, a3=0}: at t=20 {2, 0, 0} -> 0; at t=30 {2, 4, 0} -> 2.
  ASSERT_FALSE(m1.curve.empty());
  for (const BandPoint& p : m1.curve) {
    if (p.t == 20) {
      EXPECT_EQ(p.median, 0);
    }
    if (p.t == 30) {
      EXPECT_EQ(p.median, 2);
    }
  }
  ASSERT_EQ(m1.truncation.size(), 2u);
  EXPECT_EQ(m1.truncation[0].jobs_correct, 1);  // by 25 s only a1
  EXPECT_THAT(m1.truncation[1].median_best, Optional(3.0));
  ASSERT_EQ(m1.fast_p.size(), 4u);
  EXPECT_DOUBLE_EQ(m1.fast_p[0].points.back().share, 2.0 / 3);
  const GroupSummary& m2 = r->groups[2];
  EXPECT_EQ(m2.jobs_with_plateau, 0);
  EXPECT_EQ(m2.median_plateau_onset_s, std::nullopt);

  // Overall.
  ASSERT_EQ(r->truncation.size(), 2u);
  EXPECT_EQ(r->truncation[0].jobs, 5);
  EXPECT_EQ(r->truncation[0].jobs_correct, 3);  // a1 (2.0), b1 (1.5), c1 (1.1)
  EXPECT_EQ(r->truncation[1].jobs_ended_before, 5);
  EXPECT_DOUBLE_EQ(r->fast_p[0].points.back().share, 4.0 / 5);
}

TEST(PlateauReportTest, SeveralKeysAndNoKeys) {
  std::vector<JobTrajectory> jobs = {StepJob("x", 10, {{1, 1.0}}, "m1"),
                                     StepJob("y", 10, {{1, 2.0}}, "m1"),
                                     StepJob("z", 10, {{1, 3.0}}, "m2")};
  jobs[1].strategy = "tree";
  PlateauOptions o;
  o.group_by = {GroupKey::kModel, GroupKey::kStrategy};
  o.time_grid = {5, 0, 5, 10};  // unsorted with a duplicate
  absl::StatusOr<PlateauReport> r = BuildPlateauReport(jobs, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->options.time_grid, ElementsAre(0, 5, 10));
  ASSERT_EQ(r->groups.size(), 3u);
  EXPECT_EQ(r->groups[0].name, "m1 / sequential");
  EXPECT_EQ(r->groups[1].name, "m1 / tree");
  EXPECT_EQ(r->groups[2].name, "m2 / sequential");

  o.group_by = {};
  r = BuildPlateauReport(jobs, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->groups.size(), 1u);
  EXPECT_EQ(r->groups[0].name, "all");
  EXPECT_THAT(r->groups[0].median_final_best, Optional(2.0));
}

TEST(PlateauReportTest, ActiveAxisOption) {
  PlateauOptions o;
  o.axis = TimeAxis::kActive;
  absl::StatusOr<PlateauReport> r =
      BuildPlateauReport({Job("j", 100, {{10, 10, true, 1.0}, {60, 20, true, 2.0}})}, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->jobs[0].curve.steps, ElementsAre(Step{10, 1.0}, Step{20, 2.0}));
  EXPECT_EQ(r->jobs[0].curve.end_s, 60);
  EXPECT_EQ(r->options.time_grid.back(), 60);
}

TEST(PlateauReportTest, EmptySetIsFine) {
  absl::StatusOr<PlateauReport> r = BuildPlateauReport({}, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->jobs.empty());
  EXPECT_TRUE(r->groups.empty());
  EXPECT_TRUE(r->options.time_grid.empty());
  ASSERT_EQ(r->fast_p.size(), 4u);
  EXPECT_TRUE(r->fast_p[0].points.empty());
}

TEST(PlateauReportTest, RejectsBadJobsAndOptions) {
  absl::StatusOr<PlateauReport> r =
      BuildPlateauReport({StepJob("x", 10, {{1, 1}}), StepJob("x", 10, {{1, 1}})}, {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("'x' appears twice"));

  r = BuildPlateauReport({StepJob("ok", 10, {{1, 1}}), Job("bad", 10, {Correct(3, kNaN)})}, {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("job 'bad': point 0"));

  auto bad_options = [](auto mutate) {
    PlateauOptions o;
    mutate(o);
    return BuildPlateauReport({}, o).status().code();
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(bad_options([](PlateauOptions& o) { o.fractions = {0.5, 0}; }), kInvalid);
  EXPECT_EQ(bad_options([](PlateauOptions& o) { o.fractions = {1.01}; }), kInvalid);
  EXPECT_EQ(bad_options([](PlateauOptions& o) { o.fast_p = {-1}; }), kInvalid);
  EXPECT_EQ(bad_options([](PlateauOptions& o) { o.time_grid = {kNaN}; }), kInvalid);
  EXPECT_EQ(bad_options([](PlateauOptions& o) { o.auto_grid_points = 1; }), kInvalid);
  EXPECT_EQ(bad_options([](PlateauOptions& o) { o.budgets_s = {-5}; }), kInvalid);
  EXPECT_EQ(bad_options([](PlateauOptions& o) { o.onset.window_s = -5; }), kInvalid);
  EXPECT_EQ(bad_options([](PlateauOptions& o) {
              o.group_by = {GroupKey::kModel, GroupKey::kModel};
            }),
            kInvalid);
}

}  // namespace
}  // namespace pkforge::storage
