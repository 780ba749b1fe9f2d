// The job's final fresh re-measurement (final_measurement.h) through the
// job's real sink and store: one that gets a result is the job's result;
// one that gets none (executor gone) is recorded as such and the job keeps
// its outcome (MeasureFinal succeeds, no final result is invented).
#include "orchestrator/final_measurement.h"

#include <filesystem>

#include "agent/testing/fake_evaluator.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "gtest/gtest.h"
#include "orchestrator/convert.h"
#include "orchestrator/event_log.h"
#include "orchestrator/job_sink.h"
#include "orchestrator/testing/test_util.h"
#include "storage/store.h"

namespace pkforge::orchestrator {
namespace {

class FinalMeasurementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("orch_final");
    auto store = storage::TrajectoryStore::Open(dir_ + "/traj.db");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    log_ = std::make_unique<EventLog>(store_.get(), nullptr);
    storage::JobRecord r;
    r.id = job_id_ = NewId("job");
    r.spec_json = "{}";
    r.problem = "allreduce";
    r.backend = "host";
    r.dtype = "f32";
    r.agent_kind = "search";
    ASSERT_TRUE(store_->CreateJob(r).ok());
    sink_ = std::make_unique<JobSink>(job_id_, "host", JobSink::Offsets{}, log_.get(), &progress_,
                                      nullptr);
    // The chosen candidate, recorded as the agent records it.
    agent::CandidateEntry c;
    c.job_id = job_id_;
    c.source = "int pkf_run(){return 0;}";
    c.sha256 = sha256_ = Sha256Hex(c.source);
    c.backend = "host";
    c.origin = "search:test";
    ASSERT_TRUE(sink_->OnCandidate(c).ok());
  }
  void TearDown() override {
    sink_.reset();
    log_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  absl::Status Measure(agent::Evaluator* evaluator) {
    FinalMeasurementEnv f;
    f.job_id = job_id_;
    f.spec.set_problem("allreduce");
    f.spec.set_backend(v1::BACKEND_HOST);
    f.spec.set_world_size(2);
    f.spec.set_dtype(v1::DTYPE_F32);
    f.candidate_sha256 = sha256_;
    f.store = store_.get();
    f.evaluator = evaluator;
    f.sink = sink_.get();
    f.job_cancel = &cancel_;
    f.elapsed_ms = [] { return int64_t{1000}; };
    return MeasureFinal(f);
  }

  std::vector<v1::Event> Events() {
    std::vector<v1::Event> out;
    auto records = store_->ReadEvents(job_id_, 0);
    EXPECT_TRUE(records.ok()) << records.status();
    if (!records.ok()) return out;
    for (const auto& rec : *records) {
      auto ev = EventFromRecord(rec);
      EXPECT_TRUE(ev.ok()) << ev.status();
      if (ev.ok()) out.push_back(*ev);
    }
    return out;
  }

  std::string dir_, job_id_, sha256_;
  std::unique_ptr<storage::TrajectoryStore> store_;
  std::unique_ptr<EventLog> log_;
  JobProgress progress_;
  std::unique_ptr<JobSink> sink_;
  agent::CancelToken cancel_;
};

TEST_F(FinalMeasurementTest, AResultIsTheJobsResultAtTheJobsOwnSettings) {
  agent::testing::FakeEvaluator eval(
      [](const v1::EvaluateRequest&) { return agent::testing::FakeEvaluator::Ok(1.7); });
  ASSERT_TRUE(Measure(&eval).ok());
  ASSERT_EQ(eval.requests().size(), 1u);
  EXPECT_EQ(eval.requests()[0].timed_iters(), 0);  // the job's own: the executor's default
  const ProgressSnapshot p = progress_.Get();
  ASSERT_TRUE(p.final_speedup.has_value());
  EXPECT_DOUBLE_EQ(*p.final_speedup, 1.7);
  EXPECT_EQ(p.final_candidate_sha256, sha256_);
  EXPECT_EQ(p.evaluations, 0);  // not one of the search's
  auto evals = store_->ListEvaluations(job_id_);
  ASSERT_TRUE(evals.ok());
  ASSERT_EQ(evals->size(), 1u);
  EXPECT_EQ((*evals)[0].role, storage::kRoleFinal);
}

// The executor is gone when the job's result is measured: the attempt is
// recorded (started, then finished with "no result" and why, flagged as the
// final measurement so no one counts it as a search evaluation), no row and
// no final result appear, and MeasureFinal succeeds: the job keeps its
// outcome.
TEST_F(FinalMeasurementTest, NoResultIsRecordedAsSuchAndTheJobKeepsItsOutcome) {
  agent::testing::FakeEvaluator eval;
  eval.FailNext(1, absl::UnavailableError("executor gone"));
  ASSERT_TRUE(Measure(&eval).ok());
  EXPECT_EQ(eval.calls(), 1);
  const ProgressSnapshot p = progress_.Get();
  EXPECT_FALSE(p.final_speedup.has_value());
  EXPECT_EQ(p.final_evaluation_id, "");
  EXPECT_EQ(p.final_status, v1::EvaluationResult::STATUS_UNSPECIFIED);
  EXPECT_EQ(p.evaluations, 0);
  auto evals = store_->ListEvaluations(job_id_);
  ASSERT_TRUE(evals.ok());
  EXPECT_TRUE(evals->empty());
  auto stats = store_->GetJobStats(job_id_);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_FALSE(stats->final_speedup.has_value());
  std::string started_id;
  const v1::Event* finished = nullptr;
  const auto events = Events();
  for (const auto& e : events) {
    if (e.has_evaluation_started()) started_id = e.evaluation_started().evaluation_id();
    if (e.has_evaluation_finished()) finished = &e;
  }
  ASSERT_NE(started_id, "");
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->evaluation_finished().evaluation_id(), started_id);
  EXPECT_EQ(finished->evaluation_finished().status(), v1::EvaluationResult::STATUS_UNSPECIFIED);
  EXPECT_NE(finished->evaluation_finished().message().find("no result"), std::string::npos);
  EXPECT_NE(finished->evaluation_finished().message().find("executor gone"), std::string::npos);
  EXPECT_TRUE(finished->evaluation_finished().final_measurement());
}

}  // namespace
}  // namespace pkforge::orchestrator
