// The store -> API view shared by the orchestrator and the CLI's --db reads.
#include "convert/convert.h"

#include <filesystem>

#include "common/ids.h"
#include "common/sha256.h"
#include "gtest/gtest.h"

namespace pkforge::convert {
namespace {

namespace fs = std::filesystem;

class ConvertTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("convert_test_" + NewId("job"));
    fs::create_directories(dir_);
    auto s = storage::TrajectoryStore::Open((dir_ / "t.db").string());
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }

  std::string NewJob(storage::JobState end = storage::JobState::kSucceeded) {
    storage::JobRecord j;
    j.id = NewId("job");
    j.spec_json = R"({"problem":"allreduce","backend":"BACKEND_HOST","worldSize":4,)"
                  R"("agent":{"kind":"AGENT_KIND_SEARCH"},"someFieldOfANewerWriter":1})";
    j.problem = "allreduce";
    j.backend = "host";
    j.world_size = 4;
    j.dtype = "f32";
    j.agent_kind = "search";
    j.strategy = "successive_halving";
    j.created_wall_us = 1'700'000'000'000'000;
    EXPECT_TRUE(store_->CreateJob(j).ok());
    EXPECT_TRUE(store_->UpdateJobState(j.id, storage::JobState::kRunning, "",
                                       1'700'000'000'000'000).ok());
    storage::EventRecord ev{j.id, 0, 0, 0, "state_changed",
                            R"({"state":"JOB_STATE_SUCCEEDED","reason":"nothing left to try"})"};
    EXPECT_TRUE(store_->AppendEvent(ev).ok());
    EXPECT_TRUE(store_->UpdateJobState(j.id, end, "", 1'700'000'010'000'000).ok());
    return j.id;
  }

  std::string Candidate(const std::string& source) {
    storage::CandidateRecord c{Sha256Hex(source), source, "host", 1};
    EXPECT_TRUE(store_->PutCandidate(c).ok());
    return c.sha256;
  }

  storage::EvaluationRecord Eval(const std::string& job, const std::string& sha, double speedup,
                                 int64_t elapsed_ms, double queue_ms = 0) {
    storage::EvaluationRecord e;
    e.id = NewId("eval");
    e.job_id = job;
    e.candidate_sha256 = sha;
    e.status = "OK";
    e.correct = true;
    e.speedup = speedup;
    e.result_json = R"({"status":"OK","speedup":)" + std::to_string(speedup) + "}";
    e.queue_ms = queue_ms;
    e.wall_us = 1;
    e.elapsed_ms = elapsed_ms;
    return e;
  }

  fs::path dir_;
  std::unique_ptr<storage::TrajectoryStore> store_;
};

// A search job: a rung at 10 timed iterations measured 10.2x, the job's own
// setting 2.7x, the final re-measurement 3.1x. One axis: only the 2.7x is on
// the curve and is the best; the rung is flagged and counted apart, the final
// measurement is the job's result (issue #18 item 5).
TEST_F(ConvertTest, TrajectoryKeepsRungsAndTheFinalMeasurementOffTheBestAxis) {
  const std::string job = NewJob();
  const std::string a = Candidate("// a"), b = Candidate("// b");
  storage::EvaluationRecord rung = Eval(job, a, 10.2, 1000, 400);
  rung.timed_iters = 10;
  rung.comparable = false;
  ASSERT_TRUE(store_->AddEvaluation(rung).ok());
  storage::EvaluationRecord official = Eval(job, b, 2.7, 2000, 100);
  ASSERT_TRUE(store_->AddEvaluation(official).ok());
  storage::EvaluationRecord final_eval = Eval(job, a, 3.1, 3000, 50);
  final_eval.role = storage::kRoleFinal;
  final_eval.roofline_fraction = 0.5;
  ASSERT_TRUE(store_->AddEvaluation(final_eval).ok());

  TrajectoryOptions o;
  o.include_sources = o.include_results = true;
  auto t = LoadTrajectory(*store_, job, o, 1'700'000'020'000'000);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->best_curve_size(), 1);
  EXPECT_DOUBLE_EQ(t->best_curve(0).best_speedup(), 2.7);
  EXPECT_DOUBLE_EQ(t->best_curve(0).t_s(), 2.0);
  ASSERT_EQ(t->evaluations_size(), 3);
  EXPECT_TRUE(t->evaluations(0).other_settings());
  EXPECT_EQ(t->evaluations(0).timed_iters(), 10);
  EXPECT_FALSE(t->evaluations(1).other_settings());
  EXPECT_TRUE(t->evaluations(2).final_measurement());
  // active_s lines up with the search evaluations: 1.0 - 0.4, 2.0 - 0.5.
  EXPECT_NEAR(t->evaluations(0).active_s(), 0.6, 1e-9);
  EXPECT_NEAR(t->evaluations(1).active_s(), 1.5, 1e-9);
  EXPECT_NEAR(t->evaluations(2).active_s(), 1.5, 1e-9);
  EXPECT_DOUBLE_EQ(t->evaluations(1).result().speedup(), 2.7);
  ASSERT_EQ(t->candidates_size(), 2);
  EXPECT_FALSE(t->candidates(0).source().empty());

  const v1::Job& j = t->job();
  EXPECT_EQ(j.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(j.stop_reason(), "nothing left to try");
  EXPECT_EQ(j.spec().world_size(), 4);  // a newer writer's extra spec field is ignored
  EXPECT_EQ(j.evaluations(), 2);
  EXPECT_DOUBLE_EQ(j.best_speedup(), 2.7);
  EXPECT_EQ(j.best_candidate_sha256(), b);
  EXPECT_EQ(j.other_settings_evaluations(), 1);
  EXPECT_DOUBLE_EQ(j.other_settings_best_speedup(), 10.2);
  ASSERT_TRUE(j.has_final_speedup());
  EXPECT_DOUBLE_EQ(j.final_speedup(), 3.1);
  EXPECT_EQ(j.final_evaluation_id(), final_eval.id);
  EXPECT_EQ(j.final_status(), v1::EvaluationResult::OK);
  EXPECT_EQ(j.final_candidate_sha256(), a);
  EXPECT_DOUBLE_EQ(j.final_roofline_fraction(), 0.5);
  EXPECT_EQ(j.elapsed_ms(), 10000);
}

TEST_F(ConvertTest, StoredJsonThatIsNotJsonIsDataLossNamingTheRow) {
  const std::string job = NewJob();
  storage::EvaluationRecord e = Eval(job, Candidate("// c"), 1.5, 10);
  e.result_json = "{not json";
  ASSERT_TRUE(store_->AddEvaluation(e).ok());
  TrajectoryOptions o;
  o.include_results = true;
  auto t = LoadTrajectory(*store_, job, o, 0);
  ASSERT_TRUE(absl::IsDataLoss(t.status())) << t.status();
  EXPECT_NE(t.status().message().find(e.id), absl::string_view::npos);
  EXPECT_TRUE(LoadTrajectory(*store_, job, TrajectoryOptions{}, 0).ok());
  EXPECT_TRUE(absl::IsNotFound(LoadJob(*store_, NewId("job"), 0).status()));
}

TEST(ConvertEventTest, RoundTripAndUnknownTypesBecomeLogLines) {
  v1::Event e;
  e.set_job_id(NewId("job"));
  e.set_elapsed_ms(5);
  e.mutable_evaluation_finished()->set_evaluation_id("eval_x");
  e.mutable_evaluation_finished()->set_final_measurement(true);
  auto r = EventToRecord(e);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->type, "evaluation_finished");
  auto back = EventFromRecord(*r);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->evaluation_finished().final_measurement());
  storage::EventRecord future{e.job_id(), 3, 0, 0, "from_the_future", R"({"x":1})"};
  auto log = EventFromRecord(future);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->log().text(), R"(from_the_future: {"x":1})");
}

TEST(ConvertJobTest, RecordFromProtoUsesTheSameNames) {
  v1::Job j;
  j.set_id("job_x");
  j.mutable_spec()->set_backend(v1::BACKEND_CUDA);
  j.mutable_spec()->mutable_agent()->set_kind(v1::AGENT_KIND_SEARCH);
  j.set_state(v1::JOB_STATE_CANCELLED);
  j.set_best_speedup(1.25);
  const storage::JobRecord r = JobRecordFromProto(j);
  EXPECT_EQ(r.backend, "cuda");
  EXPECT_EQ(r.agent_kind, "search");
  EXPECT_EQ(r.strategy, "successive_halving");
  EXPECT_EQ(r.state, storage::JobState::kCancelled);
  EXPECT_DOUBLE_EQ(r.best_speedup.value_or(0), 1.25);
  EXPECT_EQ(ProtoStateName(v1::JOB_STATE_QUEUED), "queued");
  EXPECT_EQ(ParseStatus("WRONG_OUTPUT"), v1::EvaluationResult::WRONG_OUTPUT);
  EXPECT_EQ(ParseStatus(""), v1::EvaluationResult::STATUS_UNSPECIFIED);
}

}  // namespace
}  // namespace pkforge::convert
