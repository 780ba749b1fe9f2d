#include "storage/plateau_loader.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/plateau.h"
#include "storage/store.h"

namespace pkforge::storage {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;

constexpr int64_t kStart = 1'700'000'000'000'000;  // FakeClock's default wall start

EvaluationRecord Eval(int64_t elapsed_ms, double queue_ms, std::optional<double> speedup) {
  EvaluationRecord e;
  e.elapsed_ms = elapsed_ms;
  e.queue_ms = queue_ms;
  e.correct = speedup.has_value();
  e.status = e.correct ? "OK" : "WRONG_OUTPUT";
  e.speedup = speedup;
  return e;
}

std::vector<double> Elapsed(const JobTrajectory& j) {
  std::vector<double> out;
  for (const EvalPoint& p : j.points) out.push_back(p.elapsed_s);
  return out;
}
std::vector<double> Active(const JobTrajectory& j) {
  std::vector<double> out;
  for (const EvalPoint& p : j.points) out.push_back(p.active_s);
  return out;
}

// ------------------------------------------------- the pure conversion

TEST(TrajectoryFromRecordsTest, ActiveTimeSubtractsCumulativeQueueing) {
  JobRecord job;
  job.id = "job_x";
  job.model = "m";
  job.started_wall_us = kStart;
  job.finished_wall_us = kStart + 100'000'000;  // 100 s
  std::vector<EvaluationRecord> evals = {Eval(10'000, 2'000, 1.5), Eval(30'000, 5'000, {}),
                                         Eval(50'000, 0, 2.0)};
  JobTrajectory t = TrajectoryFromRecords(job, evals, /*now_wall_us=*/0);
  EXPECT_EQ(t.job_id, "job_x");
  EXPECT_EQ(t.model, "m");
  EXPECT_EQ(t.duration_s, 100);
  EXPECT_THAT(Elapsed(t), ElementsAre(10, 30, 50));
  EXPECT_THAT(Active(t), ElementsAre(8, 23, 43));  // 10-2, 30-7, 50-7
  EXPECT_TRUE(t.points[0].correct);
  EXPECT_EQ(t.points[0].speedup, 1.5);
  EXPECT_FALSE(t.points[1].correct);
  EXPECT_TRUE(ValidateTrajectory(t).ok()) << ValidateTrajectory(t);
}

// Issue #17 item 5: a size-ladder evaluation's multi-size score reaches the
// plateau analysis from the stored result, and the job summary keeps the
// best one among its correct comparable evaluations.
TEST(TrajectoryFromRecordsTest, MultiSizeScoreComesFromTheStoredResult) {
  EXPECT_THAT(MultiSizeScore(R"({"status":"OK","multi_size_score":1.75,"speedup":2})"),
              Optional(1.75));
  EXPECT_THAT(MultiSizeScore(R"({"multiSizeScore": 3e-1})"), Optional(0.3));
  EXPECT_EQ(MultiSizeScore(R"({"status":"OK","speedup":2})"), std::nullopt);
  // Inside a string value the key's quotes are escaped: not a score.
  EXPECT_EQ(MultiSizeScore(R"({"message":"\"multi_size_score\":9"})"), std::nullopt);
  EXPECT_EQ(MultiSizeScore(R"({"multi_size_score":"NaN"})"), std::nullopt);
  EXPECT_EQ(MultiSizeScore(""), std::nullopt);

  JobRecord job;
  job.id = "job_m";
  std::vector<EvaluationRecord> evals = {Eval(10'000, 0, 1.5), Eval(20'000, 0, 2.0),
                                         Eval(30'000, 0, {}), Eval(40'000, 0, 9.0)};
  evals[0].result_json = R"({"status":"OK","multi_size_score":1.25})";
  evals[1].result_json = R"({"status":"OK","multi_size_score":1.5})";
  evals[2].result_json = R"({"status":"WRONG_OUTPUT","multi_size_score":8})";
  evals[3].result_json = R"({"status":"OK","multi_size_score":7})";
  evals[3].comparable = false;  // a rung at other settings: not the job's
  const JobTrajectory t = TrajectoryFromRecords(job, evals, /*now_wall_us=*/0);
  EXPECT_THAT(t.points[0].multi_size_score, Optional(1.25));
  auto r = BuildPlateauReport({t}, PlateauOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->jobs[0].best_multi_size_score, Optional(1.5));
  JobRecord plain;
  plain.id = "job_p";
  auto none = BuildPlateauReport({TrajectoryFromRecords(plain, {Eval(1'000, 0, 2.0)}, 0)},
                                 PlateauOptions{});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->jobs[0].best_multi_size_score, std::nullopt);
}

TEST(TrajectoryFromRecordsTest, TiesOverlapAndOrder) {
  JobRecord job;
  job.id = "job_x";
  // Out of order; two results at the same instant; then a long queue that
  // would make active time run backwards (overlapping evaluations).
  std::vector<EvaluationRecord> evals = {Eval(20'000, 1'000, 1.0), Eval(5'000, 1'000, {}),
                                         Eval(20'000, 3'000, 1.2), Eval(25'000, 20'000, 1.1),
                                         Eval(26'000, 0, 1.3)};
  JobTrajectory t = TrajectoryFromRecords(job, evals, 0);
  EXPECT_THAT(Elapsed(t), ElementsAre(5, 20, 20, 25, 26));
  // 5-1 = 4; at 20 both queues count: 20-5 = 15; 25-25 = 0 -> clamped to 15;
  // 26-25 = 1 -> 15.
  EXPECT_THAT(Active(t), ElementsAre(4, 15, 15, 15, 15));
  // Stable among ties: input order kept.
  EXPECT_EQ(t.points[1].speedup, 1.0);
  EXPECT_EQ(t.points[2].speedup, 1.2);
  // Never started: the run lasted until its last evaluation.
  EXPECT_EQ(t.duration_s, 26);
  EXPECT_TRUE(ValidateTrajectory(t).ok()) << ValidateTrajectory(t);

  // Queueing larger than the elapsed time: active clamps at 0.
  JobTrajectory z = TrajectoryFromRecords(job, {Eval(1'000, 5'000, 1.0)}, 0);
  EXPECT_THAT(Active(z), ElementsAre(0));
}

TEST(TrajectoryFromRecordsTest, DurationForRunningAndSkewedJobs) {
  JobRecord job;
  job.id = "job_x";
  job.started_wall_us = kStart;
  // Running: up to now.
  JobTrajectory t = TrajectoryFromRecords(job, {Eval(1'000, 0, 1.0)}, kStart + 42'500'000);
  EXPECT_EQ(t.duration_s, 42.5);
  // Finished, but an evaluation's elapsed (another clock) is slightly later.
  job.finished_wall_us = kStart + 9'999'000;
  t = TrajectoryFromRecords(job, {Eval(10'000, 0, 1.0)}, 0);
  EXPECT_EQ(t.duration_s, 10);
  EXPECT_TRUE(ValidateTrajectory(t).ok());
  // No evaluations, never started.
  job.started_wall_us = job.finished_wall_us = 0;
  EXPECT_EQ(TrajectoryFromRecords(job, {}, kStart).duration_s, 0);
}

// ---------------------------------------------------- against a real store

class PlateauLoaderStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/plateau_loader_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    TrajectoryStore::Options options;
    options.clock = &clock_;
    absl::StatusOr<std::unique_ptr<TrajectoryStore>> store =
        TrajectoryStore::Open(dir_ + "/db.sqlite", options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    candidate_.source = "int pkf_run() { return 0; }";
    candidate_.sha256 = Sha256Hex(candidate_.source);
    candidate_.backend = "host";
    ASSERT_TRUE(store_->PutCandidate(candidate_).ok());
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string CreateJob(const std::string& model, const std::string& strategy) {
    JobRecord job;
    job.id = NewId("job", clock_.NowWallMicros());
    job.spec_json = "{}";
    job.problem = "allreduce";
    job.backend = "host";
    job.dtype = "f32";
    job.agent_kind = "llm";
    job.model = model;
    job.strategy = strategy;
    job.label = "exp1";
    job.created_wall_us = clock_.NowWallMicros();
    EXPECT_TRUE(store_->CreateJob(job).ok());
    clock_.AdvanceMicros(1000);  // distinct, ordered ids
    return job.id;
  }

  void AddEval(const std::string& job_id, int64_t elapsed_ms, double queue_ms,
               std::optional<double> speedup) {
    EvaluationRecord e = Eval(elapsed_ms, queue_ms, speedup);
    e.id = NewId("eval", clock_.NowWallMicros());
    e.job_id = job_id;
    e.candidate_sha256 = candidate_.sha256;
    e.executor = "local";
    e.wall_us = clock_.NowWallMicros();
    absl::Status s = store_->AddEvaluation(e);
    EXPECT_TRUE(s.ok()) << s;
  }

  FakeClock clock_{kStart};
  std::string dir_;
  std::unique_ptr<TrajectoryStore> store_;
  CandidateRecord candidate_;
};

TEST_F(PlateauLoaderStoreTest, LoadsAFinishedJob) {
  const std::string id = CreateJob("gpt", "sequential");
  const int64_t started = clock_.NowWallMicros();
  ASSERT_TRUE(store_->UpdateJobState(id, JobState::kRunning, "", started).ok());
  AddEval(id, 12'000, 2'000, {});
  AddEval(id, 30'000, 4'000, 1.25);
  AddEval(id, 75'000, 1'000, 2.5);
  ASSERT_TRUE(store_->UpdateJobState(id, JobState::kSucceeded, "", started + 120'000'000).ok());

  absl::StatusOr<JobTrajectory> t = LoadJobTrajectory(*store_, id, &clock_);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->job_id, id);
  EXPECT_EQ(t->problem, "allreduce");
  EXPECT_EQ(t->model, "gpt");
  EXPECT_EQ(t->strategy, "sequential");
  EXPECT_EQ(t->agent_kind, "llm");
  EXPECT_EQ(t->label, "exp1");
  EXPECT_EQ(t->duration_s, 120);
  EXPECT_THAT(Elapsed(*t), ElementsAre(12, 30, 75));
  EXPECT_THAT(Active(*t), ElementsAre(10, 24, 68));

  // End to end: the loaded trajectory feeds the analysis.
  absl::StatusOr<BestSoFarCurve> curve = ComputeBestSoFar(*t, TimeAxis::kActive);
  ASSERT_TRUE(curve.ok()) << curve.status();
  EXPECT_THAT(curve->steps, ElementsAre(Step{24, 1.25}, Step{68, 2.5}));
  EXPECT_EQ(curve->end_s, 113);  // 120 - 7 s of queueing
  EXPECT_THAT(PlateauOnset(*curve, {}), Optional(68.0));
}

TEST_F(PlateauLoaderStoreTest, RunningJobLastsUntilNow) {
  const std::string id = CreateJob("gpt", "tree");
  ASSERT_TRUE(store_->UpdateJobState(id, JobState::kRunning, "", clock_.NowWallMicros()).ok());
  AddEval(id, 5'000, 0, 1.1);
  clock_.AdvanceMicros(60'000'000);
  absl::StatusOr<JobTrajectory> t = LoadJobTrajectory(*store_, id, &clock_);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->duration_s, 60);
}

TEST_F(PlateauLoaderStoreTest, UnknownJobIsNotFound) {
  const std::string missing = NewId("job", kStart);
  absl::StatusOr<JobTrajectory> t = LoadJobTrajectory(*store_, missing, &clock_);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound) << t.status();
  EXPECT_THAT(std::string(t.status().message()), HasSubstr(missing));
}

TEST_F(PlateauLoaderStoreTest, LoadsAFilteredSet) {
  const std::string a = CreateJob("gpt", "sequential");
  const std::string b = CreateJob("claude", "sequential");
  const std::string c = CreateJob("gpt", "tree");
  for (const std::string& id : {a, b, c}) {
    ASSERT_TRUE(store_->UpdateJobState(id, JobState::kRunning, "", kStart).ok());
    AddEval(id, 1'000, 0, 1.0);
    ASSERT_TRUE(store_->UpdateJobState(id, JobState::kSucceeded, "", kStart + 10'000'000).ok());
  }
  JobFilter filter;
  filter.model = "gpt";
  absl::StatusOr<std::vector<JobTrajectory>> jobs = LoadJobTrajectories(*store_, filter, &clock_);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].job_id, a);
  EXPECT_EQ((*jobs)[1].job_id, c);
  EXPECT_EQ((*jobs)[1].strategy, "tree");
  EXPECT_EQ((*jobs)[0].points.size(), 1u);

  filter = {};
  absl::StatusOr<std::vector<JobTrajectory>> all = LoadJobTrajectories(*store_, filter, &clock_);
  ASSERT_TRUE(all.ok()) << all.status();
  PlateauOptions o;
  o.group_by = {GroupKey::kModel};
  absl::StatusOr<PlateauReport> report = BuildPlateauReport(*all, o);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->groups.size(), 2u);
  EXPECT_EQ(report->groups[0].name, "claude");
  EXPECT_EQ(report->groups[1].jobs, 2);
}

// The plateau analysis reads up to 100,000 jobs: without their specs (which
// can hold whole candidate sources) or their results' text, but with every
// field it uses, the multi-size score included.
TEST_F(PlateauLoaderStoreTest, AnalysisReadsNeitherSpecsNorResultTexts) {
  const std::string id = CreateJob("gpt", "sequential");
  const std::string big(1 << 20, 'x');
  {
    JobRecord heavy;
    heavy.id = NewId("job", clock_.NowWallMicros());
    heavy.spec_json = "{\"replay\":\"" + big + "\"}";
    heavy.problem = "allreduce";
    heavy.backend = "host";
    heavy.dtype = "f32";
    heavy.agent_kind = "replay";
    heavy.label = "exp1";
    heavy.created_wall_us = clock_.NowWallMicros();
    ASSERT_TRUE(store_->CreateJob(heavy).ok());
    clock_.AdvanceMicros(1000);
  }
  ASSERT_TRUE(store_->UpdateJobState(id, JobState::kRunning, "", kStart).ok());
  auto add = [&](int64_t elapsed_ms, const std::string& result_json) {
    EvaluationRecord e = Eval(elapsed_ms, 0, 1.5);
    e.id = NewId("eval", clock_.NowWallMicros());
    e.job_id = id;
    e.candidate_sha256 = candidate_.sha256;
    e.executor = "local";
    e.wall_us = clock_.NowWallMicros();
    e.result_json = result_json;
    ASSERT_TRUE(store_->AddEvaluation(e).ok());
    clock_.AdvanceMicros(1000);
  };
  add(1'000, R"({"status":"OK","multiSizeScore":1.75,"log":")" + big + R"("})");
  add(2'000, R"({"status":"OK","multi_size_score":0.5})");
  add(3'000, R"({"status":"OK","speedup":1.5})");
  add(4'000, "not json");

  JobFilter f;
  absl::StatusOr<std::vector<JobRecord>> full = store_->ListJobs(f);
  absl::StatusOr<std::vector<JobRecord>> lean = store_->ListJobSummaries(f);
  ASSERT_TRUE(full.ok() && lean.ok());
  ASSERT_EQ(lean->size(), 2u);
  for (size_t i = 0; i < lean->size(); ++i) {
    EXPECT_EQ((*lean)[i].spec_json, "");
    EXPECT_EQ((*lean)[i].id, (*full)[i].id);
    EXPECT_EQ((*lean)[i].model, (*full)[i].model);
    EXPECT_EQ((*lean)[i].started_wall_us, (*full)[i].started_wall_us);
  }
  EXPECT_GT((*full)[1].spec_json.size(), big.size());

  absl::StatusOr<std::vector<EvaluationRecord>> points = store_->ListEvaluationPoints(id);
  ASSERT_TRUE(points.ok()) << points.status();
  ASSERT_EQ(points->size(), 4u);
  for (const EvaluationRecord& e : *points) EXPECT_LT(e.result_json.size(), 64u) << e.result_json;
  EXPECT_THAT(MultiSizeScore((*points)[0].result_json), Optional(1.75));
  EXPECT_THAT(MultiSizeScore((*points)[1].result_json), Optional(0.5));
  EXPECT_EQ(MultiSizeScore((*points)[2].result_json), std::nullopt);
  EXPECT_EQ(MultiSizeScore((*points)[3].result_json), std::nullopt);

  // The loaded trajectories: the same points as from the full records.
  absl::StatusOr<std::vector<JobTrajectory>> all = LoadJobTrajectories(*store_, f, &clock_);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  absl::StatusOr<std::vector<EvaluationRecord>> records = store_->ListEvaluations(id);
  ASSERT_TRUE(records.ok());
  const JobTrajectory expected = TrajectoryFromRecords((*full)[0], *records, clock_.NowWallMicros());
  ASSERT_EQ((*all)[0].points.size(), expected.points.size());
  for (size_t i = 0; i < expected.points.size(); ++i) {
    EXPECT_EQ((*all)[0].points[i].speedup, expected.points[i].speedup);
    EXPECT_EQ((*all)[0].points[i].multi_size_score, expected.points[i].multi_size_score);
  }
}

}  // namespace
}  // namespace pkforge::storage
