// The orchestrator in-process over real sockets: a real gRPC server, a real
// SQLite file in a temp dir, fake executors that are real gRPC servers, and
// the agent module's fake LLM provider (a real HTTP server).
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "agent/testing/fake_http_server.h"
#include "common/sha256.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/convert.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/testing/fake_executor.h"
#include "orchestrator/testing/test_util.h"

namespace pkforge::orchestrator {
namespace {

using ::testing::HasSubstr;
using testing::FakeExecutor;
using testing::FakeExecutorOptions;

constexpr char kKeyEnv[] = "PKF_ORCH_TEST_KEY";
constexpr char kKey[] = "sk-orch-test-canary-0123456789";

int64_t Count(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
  int64_t n = -1;
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return n;
}

std::string Text(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr);
  std::string out;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(st, 0);
    out += t ? reinterpret_cast<const char*>(t) : "";
    out += "\n";
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return out;
}

std::string FileReply(int variant) {
  return fmt::format(
      "Improved.\n```cuda\n#include \"pkforge/candidate.h\"\n// variant {}\n"
      "extern \"C\" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in,\n"
      "                        pkf_tensor* out, int32_t n_out, void* stream) {{\n"
      "  return 0;\n}}\n```\n",
      variant);
}

void ExpectContiguous(const std::vector<v1::Event>& events, int64_t first) {
  for (size_t i = 0; i < events.size(); ++i) {
    ASSERT_EQ(events[i].seq(), first + static_cast<int64_t>(i)) << "at index " << i;
  }
}

class OrchestratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("orch_test");
    ASSERT_FALSE(dir_.empty());
    setenv(kKeyEnv, kKey, 1);
    FakeExecutorOptions fo;
    fo.delay_ms = 5;
    auto f = FakeExecutor::Start(fo);
    ASSERT_TRUE(f.ok()) << f.status();
    executor_ = std::move(*f);
  }
  void TearDown() override {
    orch_.reset();
    executor_.reset();
    std::filesystem::remove_all(dir_);
  }

  OrchestratorConfig Config() {
    OrchestratorConfig c;
    c.listen = "127.0.0.1:0";
    c.db = dir_ + "/traj.db";
    c.executors.push_back(ExecutorEndpoint{.address = executor_->address()});
    c.heartbeat_interval_s = 0.2;
    c.health_interval_s = 0.3;
    c.llm_initial_backoff_ms = 1;
    c.llm_max_backoff_ms = 5;
    return c;
  }

  void StartOrchestrator(OrchestratorConfig c) {
    auto o = Orchestrator::Start(c);
    ASSERT_TRUE(o.ok()) << o.status();
    orch_ = std::move(*o);
    stub_ = testing::Client(orch_->address());
  }
  void StartOrchestrator() { StartOrchestrator(Config()); }
  // Config() with the operator's provider "test" at `url` (key in kKeyEnv).
  OrchestratorConfig WithProvider(OrchestratorConfig c, const std::string& url) {
    c.providers.push_back(LlmProvider{"test", "openai", url, kKeyEnv});
    return c;
  }

  absl::StatusOr<v1::Job> Submit(const v1::JobSpec& spec, const std::string& request_id = "") {
    grpc::ClientContext ctx;
    v1::SubmitJobRequest req;
    *req.mutable_spec() = spec;
    req.set_client_request_id(request_id);
    v1::Job job;
    grpc::Status s = stub_->SubmitJob(&ctx, req, &job);
    if (!s.ok()) return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
    return job;
  }

  std::string db() const { return dir_ + "/traj.db"; }

  std::string dir_;
  std::unique_ptr<FakeExecutor> executor_;
  std::unique_ptr<Orchestrator> orch_;
  std::unique_ptr<v1::Orchestrator::Stub> stub_;
};

TEST_F(OrchestratorTest, SearchJobRunsToCompletionWithEverythingStoredAndStreamed) {
  StartOrchestrator();
  auto job = Submit(testing::SearchSpec(10));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_QUEUED);
  // A live watcher from the start, concurrently with the job.
  testing::WatchResult live;
  std::thread watcher([&] { live = testing::Watch(stub_.get(), job->id(), 0); });
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 30);
  ASSERT_TRUE(done.ok()) << done.status();
  watcher.join();
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->error();
  EXPECT_GT(done->evaluations(), 0);
  EXPECT_LE(done->evaluations(), 10);
  EXPECT_GT(done->turns(), 0);
  // Default settings: rung 0 (6 configurations) times with fewer iterations
  // than the job's and is kept apart; the later rungs run at the job's own
  // settings and make its best, which is the agent's choice; the result is
  // the final fresh re-measurement of it (#18 item 5).
  EXPECT_EQ(done->other_settings_evaluations(), 6);
  EXPECT_EQ(done->evaluations(), 6 + 2 + 1);
  EXPECT_TRUE(done->has_best_speedup());
  EXPECT_EQ(done->best_candidate_sha256(), done->final_candidate_sha256());
  ASSERT_TRUE(done->has_final_speedup());
  EXPECT_EQ(done->final_status(), v1::EvaluationResult::OK);
  EXPECT_FALSE(done->final_candidate_sha256().empty());
  // Fresh: one more run on the executor than the search's evaluations.
  EXPECT_EQ(executor_->evaluations_finished(), done->evaluations() + 1);
  EXPECT_FALSE(done->stop_reason().empty());

  // Everything in SQLite.
  const std::string& id = done->id();
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM turns WHERE job_id='" + id + "'"), done->turns());
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM evaluations WHERE job_id='" + id +
                            "' AND role='search'"),
            done->evaluations());
  EXPECT_EQ(Text(db(), "SELECT id FROM evaluations WHERE job_id='" + id + "' AND role='final'"),
            done->final_evaluation_id() + "\n");
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM evaluations e LEFT JOIN candidates c ON "
                        "c.sha256 = e.candidate_sha256 WHERE c.sha256 IS NULL"),
            0);
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM events WHERE job_id='" + id +
                            "' AND type='evaluation_finished'"),
            done->evaluations() + 1);  // and the final measurement's
  EXPECT_EQ(Text(db(), "SELECT state FROM jobs WHERE id='" + id + "'"), "succeeded\n");

  // The live watcher saw every event in order and ended with the job.
  ASSERT_TRUE(live.status.ok()) << live.status.error_message();
  ExpectContiguous(live.events, 1);
  const int64_t stored = Count(db(), "SELECT COUNT(*) FROM events WHERE job_id='" + id + "'");
  EXPECT_EQ(static_cast<int64_t>(live.events.size()), stored);
  ASSERT_FALSE(live.events.empty());
  EXPECT_EQ(live.events.front().state_changed().state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(live.events.back().state_changed().state(), v1::JOB_STATE_SUCCEEDED);

  // A replay from seq 0 after completion is the same stream.
  auto replay = testing::Watch(stub_.get(), id, 0);
  ASSERT_TRUE(replay.status.ok());
  ASSERT_EQ(replay.events.size(), live.events.size());
  for (size_t i = 0; i < replay.events.size(); ++i) {
    EXPECT_EQ(replay.events[i].SerializeAsString(), live.events[i].SerializeAsString()) << i;
  }
  // GetTrajectory agrees with the job.
  grpc::ClientContext ctx;
  v1::GetTrajectoryRequest treq;
  treq.set_job_id(id);
  treq.set_include_sources(true);
  v1::Trajectory traj;
  ASSERT_TRUE(stub_->GetTrajectory(&ctx, treq, &traj).ok());
  // The search's evaluations and the final measurement, flagged; rung 0
  // (other settings) is off the best-so-far curve, the later rungs on it.
  ASSERT_EQ(traj.evaluations_size(), done->evaluations() + 1);
  EXPECT_TRUE(traj.evaluations(done->evaluations()).final_measurement());
  EXPECT_EQ(traj.evaluations(done->evaluations()).id(), done->final_evaluation_id());
  EXPECT_TRUE(traj.evaluations(0).other_settings());
  EXPECT_EQ(traj.evaluations(0).timed_iters(), 10);
  EXPECT_EQ(traj.turns_size(), done->turns());
  EXPECT_FALSE(traj.evaluations(6).other_settings());
  EXPECT_EQ(traj.evaluations(6).timed_iters(), 0);  // the job's own: the executor's default
  ASSERT_FALSE(traj.best_curve().empty());
  EXPECT_DOUBLE_EQ(traj.best_curve().rbegin()->best_speedup(), done->best_speedup());
  ASSERT_FALSE(traj.candidates().empty());
  EXPECT_EQ(Sha256Hex(traj.candidates(0).source()), traj.candidates(0).sha256());
}

TEST_F(OrchestratorTest, LlmJobRecordsEveryCallAndNeverStoresTheKey) {
  auto server = agent::testing::FakeHttpServer::Start();
  ASSERT_TRUE(server.ok());
  std::atomic<int> n{0};
  (*server)->SetDefault([&](const agent::testing::RecordedRequest&) {
    return agent::testing::FakeHttpServer::OpenAiReply(FileReply(++n), 100, 50);
  });
  StartOrchestrator(WithProvider(Config(), (*server)->base_url() + "/v1"));
  auto job = Submit(testing::LlmSpec("test", 3));
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 30);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->error();
  EXPECT_EQ(done->stop_reason(), "max turns");
  EXPECT_EQ(done->turns(), 3);
  EXPECT_EQ(done->evaluations(), 3);
  EXPECT_EQ(done->tokens(), 3 * 150);
  const std::string& id = done->id();
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM llm_calls WHERE job_id='" + id + "'"), 3);
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM llm_calls WHERE job_id='" + id +
                            "' AND length(prompt) > 100 AND length(reply) > 20"),
            3);
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM turns WHERE job_id='" + id + "'"), 3);
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM evaluations WHERE job_id='" + id +
                            "' AND role='search'"),
            3);
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM events WHERE job_id='" + id + "' AND type='llm_call'"),
            3);
  // The key reached the provider but no row of any table.
  auto reqs = (*server)->requests();
  ASSERT_FALSE(reqs.empty());
  EXPECT_THAT(reqs[0].headers["authorization"], HasSubstr(kKey));
  // The raw bytes of the database and its WAL hold no copy of the key.
  std::ifstream raw(db(), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(raw)), std::istreambuf_iterator<char>());
  std::ifstream wal(db() + "-wal", std::ios::binary);
  bytes.append((std::istreambuf_iterator<char>(wal)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.find(kKey), std::string::npos);
}

TEST_F(OrchestratorTest, WatchResumesAfterADroppedStreamWithoutLossOrDuplicates) {
  executor_->set_delay_ms(30);
  StartOrchestrator();
  auto job = Submit(testing::SearchSpec(8));
  ASSERT_TRUE(job.ok()) << job.status();
  // Drop the stream after 5 events, then resume from the last seq seen,
  // while the job is still producing events.
  auto first = testing::Watch(stub_.get(), job->id(), 0, false, 5);
  ASSERT_EQ(first.events.size(), 5u);
  ExpectContiguous(first.events, 1);
  auto rest = testing::Watch(stub_.get(), job->id(), first.events.back().seq());
  ASSERT_TRUE(rest.status.ok()) << rest.status.error_message();
  ExpectContiguous(rest.events, 6);
  ASSERT_FALSE(rest.events.empty());
  EXPECT_TRUE(IsTerminal(rest.events.back().state_changed().state()));
  auto all = testing::Watch(stub_.get(), job->id(), 0, true);
  EXPECT_EQ(all.events.size(), first.events.size() + rest.events.size());
  // no_follow on a finished job stops at its last event; after_seq past it
  // gives nothing.
  auto none = testing::Watch(stub_.get(), job->id(), all.events.back().seq(), true);
  EXPECT_TRUE(none.status.ok());
  EXPECT_TRUE(none.events.empty());
}

TEST_F(OrchestratorTest, IdleWatchGetsHeartbeatsAndCancelStopsAJobQuickly) {
  executor_->set_delay_ms(20000);  // evaluations hang until cancelled
  StartOrchestrator();
  auto job = Submit(testing::SearchSpec(8));
  ASSERT_TRUE(job.ok()) << job.status();
  testing::WatchResult live;
  std::thread watcher([&] { live = testing::Watch(stub_.get(), job->id(), 0); });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const auto t0 = std::chrono::steady_clock::now();
  {
    grpc::ClientContext ctx;
    v1::CancelJobRequest req;
    req.set_job_id(job->id());
    req.set_reason("test");
    v1::Job j;
    ASSERT_TRUE(stub_->CancelJob(&ctx, req, &j).ok());
  }
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 10);
  const double stop_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(done.ok()) << done.status();
  watcher.join();
  EXPECT_EQ(done->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(done->stop_reason(), "cancelled: test");
  EXPECT_LT(stop_s, 2.0);
  // A cancelled job is not re-measured: it has no result.
  EXPECT_EQ(done->final_evaluation_id(), "");
  EXPECT_FALSE(done->has_final_speedup());
  EXPECT_GE(live.heartbeats, 1);
  ASSERT_FALSE(live.events.empty());
  EXPECT_EQ(live.events.back().state_changed().state(), v1::JOB_STATE_CANCELLED);
  // The in-flight evaluation was aborted (recorded without a result).
  bool aborted = false;
  for (const auto& e : live.events) {
    if (e.has_evaluation_finished() &&
        e.evaluation_finished().status() == v1::EvaluationResult::STATUS_UNSPECIFIED) {
      aborted = true;
    }
  }
  EXPECT_TRUE(aborted);
}

TEST_F(OrchestratorTest, InvalidSubmissionsNameTheField) {
  StartOrchestrator(WithProvider(Config(), "http://127.0.0.1:1/v1"));
  const std::string replay_missing = dir_ + "/nope";
  struct Case {
    std::string name;
    std::function<void(v1::JobSpec&)> mutate;
    absl::StatusCode code;
    std::string field;
  };
  std::vector<Case> cases = {
      {"no problem", [](v1::JobSpec& s) { s.clear_problem(); }, absl::StatusCode::kInvalidArgument,
       "spec.problem"},
      {"unknown problem", [](v1::JobSpec& s) { s.set_problem("nope"); },
       absl::StatusCode::kInvalidArgument, "spec.problem"},
      {"no backend", [](v1::JobSpec& s) { s.set_backend(v1::BACKEND_UNSPECIFIED); },
       absl::StatusCode::kInvalidArgument, "spec.backend"},
      {"world size 0", [](v1::JobSpec& s) { s.set_world_size(0); },
       absl::StatusCode::kInvalidArgument, "spec.world_size"},
      {"world size above GPUs", [](v1::JobSpec& s) {
         s.set_backend(v1::BACKEND_CUDA);
         s.set_world_size(16);
       }, absl::StatusCode::kInvalidArgument, "spec.world_size"},
      {"bad dtype", [](v1::JobSpec& s) { s.set_dtype(v1::DTYPE_I64); },
       absl::StatusCode::kInvalidArgument, "spec.dtype"},
      {"bad preset", [](v1::JobSpec& s) { s.mutable_size()->set_preset("huge"); },
       absl::StatusCode::kInvalidArgument, "spec.size.preset"},
      {"no budget", [](v1::JobSpec& s) { s.clear_budget(); }, absl::StatusCode::kInvalidArgument,
       "spec.budget"},
      {"negative wall", [](v1::JobSpec& s) { s.mutable_budget()->set_wall_seconds(-1); },
       absl::StatusCode::kInvalidArgument, "spec.budget.wall_seconds"},
      {"no agent", [](v1::JobSpec& s) { s.clear_agent(); }, absl::StatusCode::kInvalidArgument,
       "spec.agent.kind"},
      {"llm without model", [](v1::JobSpec& s) {
         s = testing::LlmSpec("test");
         s.mutable_agent()->mutable_llm()->clear_model();
       }, absl::StatusCode::kInvalidArgument, "spec.agent.llm.model"},
      {"llm without provider name", [](v1::JobSpec& s) { s = testing::LlmSpec(""); },
       absl::StatusCode::kInvalidArgument, "spec.agent.llm.provider_name"},
      {"llm unknown provider", [](v1::JobSpec& s) { s = testing::LlmSpec("nope"); },
       absl::StatusCode::kInvalidArgument, "spec.agent.llm.provider_name"},
      {"llm client key env", [](v1::JobSpec& s) {
         s = testing::LlmSpec("test");
         s.mutable_agent()->mutable_llm()->set_api_key_env("HOME");
       }, absl::StatusCode::kInvalidArgument, "spec.agent.llm.api_key_env"},
      {"llm client base_url", [](v1::JobSpec& s) {
         s = testing::LlmSpec("test");
         s.mutable_agent()->mutable_llm()->set_base_url("http://127.0.0.1:2/v1");
       }, absl::StatusCode::kInvalidArgument, "spec.agent.llm.base_url"},
      {"replay dir without a replay root", [&](v1::JobSpec& s) { s = testing::ReplaySpec(replay_missing); },
       absl::StatusCode::kPermissionDenied, "spec.agent.replay_dir"},
      {"trials", [](v1::JobSpec& s) { s.mutable_eval()->set_trials(1000); },
       absl::StatusCode::kInvalidArgument, "spec.eval.trials"},
      // API fuzzing, session 16: best_of_n n = 2^31-1 killed the orchestrator
      // (bad_alloc on the job's thread); control characters in the label
      // and model were printed raw by `pkforge jobs`; an empty replay source
      // failed the job in storage after admission.
      {"best_of_n too wide", [](v1::JobSpec& s) {
         s = testing::LlmSpec("test");
         s.mutable_agent()->mutable_strategy()->set_kind(v1::STRATEGY_BEST_OF_N);
         s.mutable_agent()->mutable_strategy()->set_n(2147483647);
       }, absl::StatusCode::kInvalidArgument, "agent.strategy"},
      {"tree too wide", [](v1::JobSpec& s) {
         s = testing::LlmSpec("test");
         s.mutable_agent()->mutable_strategy()->set_kind(v1::STRATEGY_TREE);
         s.mutable_agent()->mutable_strategy()->set_top_k(65);
       }, absl::StatusCode::kInvalidArgument, "agent.strategy"},
      {"label with an escape", [](v1::JobSpec& s) { s.set_label("ok\x1b[2J\nforged row"); },
       absl::StatusCode::kInvalidArgument, "spec.label"},
      {"model with a newline", [](v1::JobSpec& s) {
         s = testing::LlmSpec("test");
         s.mutable_agent()->mutable_llm()->set_model("m\nx");
       }, absl::StatusCode::kInvalidArgument, "spec.agent.llm.model"},
      {"empty replay source", [](v1::JobSpec& s) {
         s.mutable_agent()->set_kind(v1::AGENT_KIND_REPLAY);
         auto* src = s.mutable_agent()->add_replay_sources();
         src->set_name("empty.cc");
       }, absl::StatusCode::kInvalidArgument, "spec.agent.replay_sources"},
  };
  for (const auto& c : cases) {
    v1::JobSpec spec = testing::SearchSpec();
    c.mutate(spec);
    auto r = Submit(spec);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), c.code) << c.name << ": " << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.field)) << c.name;
  }
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM jobs"), 0);
}

TEST_F(OrchestratorTest, ClientRequestIdMakesSubmitIdempotent) {
  StartOrchestrator();
  auto a = Submit(testing::SearchSpec(2), "req-1");
  auto b = Submit(testing::SearchSpec(2), "req-1");
  auto c = Submit(testing::SearchSpec(2), "req-2");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->id(), b->id());
  EXPECT_NE(a->id(), c->id());
  ASSERT_TRUE(testing::WaitForEnd(stub_.get(), a->id(), 20).ok());
  ASSERT_TRUE(testing::WaitForEnd(stub_.get(), c->id(), 20).ok());
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM jobs"), 2);
  // The same id with another spec is not the same submission (API fuzzing,
  // session 16: it got job a with OK and the new spec was dropped).
  auto d = Submit(testing::SearchSpec(5), "req-1");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kAlreadyExists) << d.status();
  EXPECT_THAT(std::string(d.status().message()), HasSubstr(a->id()));
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM jobs"), 2);
}

// The key is stored with the job, so a new orchestrator on the same database
// (here after a clean shutdown; orchestrator_process_test covers SIGKILL)
// still returns the first job -- finished by now, so built from the store.
TEST_F(OrchestratorTest, ClientRequestIdSurvivesARestart) {
  StartOrchestrator();
  auto a = Submit(testing::SearchSpec(2), "req-1");
  ASSERT_TRUE(a.ok()) << a.status();
  auto done = testing::WaitForEnd(stub_.get(), a->id(), 20);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->error();
  orch_.reset();

  StartOrchestrator();
  // A different spec under the key is refused, naming the job (it was
  // answered with the first job and dropped until session 16's API fuzzing);
  // the same spec gets the first job.
  auto other = Submit(testing::SearchSpec(5), "req-1");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(other.status().message()), HasSubstr(a->id()));
  auto again = Submit(testing::SearchSpec(2), "req-1");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->id(), a->id());
  EXPECT_EQ(again->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(again->spec().budget().max_evaluations(), 2);
  EXPECT_EQ(again->evaluations(), done->evaluations());
  // Repeats in this process now come from the map, with the same answer.
  auto third = Submit(testing::SearchSpec(2), "req-1");
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(third->id(), a->id());
  // Jobs without a key are never merged.
  auto x = Submit(testing::SearchSpec(1));
  auto y = Submit(testing::SearchSpec(1));
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_NE(x->id(), y->id());
  EXPECT_NE(x->id(), a->id());
  ASSERT_TRUE(testing::WaitForEnd(stub_.get(), x->id(), 20).ok());
  ASSERT_TRUE(testing::WaitForEnd(stub_.get(), y->id(), 20).ok());
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM jobs"), 3);
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM jobs WHERE client_request_id = 'req-1'"), 1);
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM jobs WHERE client_request_id = ''"), 2);
}

// Red team round 27: SubmitJob had no bound on the queue (60 jobs of 3.9
// MiB: the daemon from 33 to 590 MiB in 6 s). Beyond max_queued_jobs a
// submission is refused with RESOURCE_EXHAUSTED and stores nothing; queued
// jobs still run.
TEST_F(OrchestratorTest, AFullQueueRefusesSubmissionsAndStoresNothing) {
  OrchestratorConfig c = Config();
  c.max_concurrent_jobs = 1;
  c.max_queued_jobs = 2;
  executor_->set_delay_ms(50);
  StartOrchestrator(c);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {  // one running, two waiting
    auto j = Submit(testing::SearchSpec(3));
    ASSERT_TRUE(j.ok()) << j.status();
    ids.push_back(j->id());
  }
  auto refused = Submit(testing::SearchSpec(3));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_NE(refused.status().message().find("max_queued_jobs"), std::string::npos)
      << refused.status();
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM jobs"), 3);
  for (const auto& id : ids) {
    auto done = testing::WaitForEnd(stub_.get(), id, 30);
    ASSERT_TRUE(done.ok());
    EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED);
  }
  // Room again once the queue drained.
  auto later = Submit(testing::SearchSpec(1));
  EXPECT_TRUE(later.ok()) << later.status();
  if (later.ok()) {
    EXPECT_TRUE(testing::WaitForEnd(stub_.get(), later->id(), 30).ok());
  }
}

TEST_F(OrchestratorTest, ConcurrencyLimitQueuesJobsInOrder) {
  OrchestratorConfig c = Config();
  c.max_concurrent_jobs = 2;
  executor_->set_delay_ms(20);
  StartOrchestrator(c);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto j = Submit(testing::SearchSpec(3));
    ASSERT_TRUE(j.ok());
    ids.push_back(j->id());
  }
  grpc::ClientContext ctx;
  v1::ListJobsResponse list;
  ASSERT_TRUE(stub_->ListJobs(&ctx, v1::ListJobsRequest(), &list).ok());
  int running = 0;
  for (const auto& j : list.jobs()) running += j.state() == v1::JOB_STATE_RUNNING;
  EXPECT_LE(running, 2);
  std::vector<int64_t> started;
  for (const auto& id : ids) {
    auto done = testing::WaitForEnd(stub_.get(), id, 30);
    ASSERT_TRUE(done.ok());
    EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED);
    started.push_back(done->started_wall_us());
  }
  EXPECT_LE(started[0], started[2]);
  EXPECT_LE(started[1], started[3]);
  EXPECT_LE(executor_->max_in_flight(), 2);
}

}  // namespace
}  // namespace pkforge::orchestrator

namespace pkforge::orchestrator {
namespace {

TEST_F(OrchestratorTest, TwoHundredConcurrentLlmJobsCompleteWithBoundedMemory) {
  auto server = agent::testing::FakeHttpServer::Start();
  ASSERT_TRUE(server.ok());
  std::atomic<int> n{0};
  (*server)->SetDefault([&](const agent::testing::RecordedRequest&) {
    auto r = agent::testing::FakeHttpServer::OpenAiReply(FileReply(++n), 100, 50);
    r.delay_ms = 50;
    return r;
  });
  executor_->set_delay_ms(2);
  OrchestratorConfig c = WithProvider(Config(), (*server)->base_url() + "/v1");
  c.max_concurrent_jobs = 200;
  c.rpc_threads = 4;
  StartOrchestrator(c);
  const int64_t rss_before = testing::RssKb();
  constexpr int kJobs = 200;
  std::vector<std::string> ids;
  for (int i = 0; i < kJobs; ++i) {
    auto job = Submit(testing::LlmSpec("test", 2));
    ASSERT_TRUE(job.ok()) << job.status();
    ids.push_back(job->id());
  }
  // A handful of live watchers alongside.
  std::vector<testing::WatchResult> watched(5);
  std::vector<std::thread> watchers;
  for (int i = 0; i < 5; ++i) {
    watchers.emplace_back([&, i] { watched[i] = testing::Watch(stub_.get(), ids[i * 40], 0); });
  }
  int64_t rss_peak = rss_before;
  for (const auto& id : ids) {
    auto done = testing::WaitForEnd(stub_.get(), id, 90);
    ASSERT_TRUE(done.ok()) << done.status();
    EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->error();
    EXPECT_EQ(done->turns(), 2);
    rss_peak = std::max(rss_peak, testing::RssKb());
  }
  for (auto& t : watchers) t.join();
  for (const auto& w : watched) {
    EXPECT_TRUE(w.status.ok());
    ExpectContiguous(w.events, 1);
  }
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM llm_calls"), 2 * kJobs);
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM evaluations WHERE role='search'"), 2 * kJobs);
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM evaluations WHERE role='final'"), kJobs);
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM jobs WHERE state = 'succeeded'"), kJobs);
  std::printf("[ metrics  ] 200 jobs: RSS before %lld KiB, peak %lld KiB (+%lld KiB)\n",
              static_cast<long long>(rss_before), static_cast<long long>(rss_peak),
              static_cast<long long>(rss_peak - rss_before));
  // Bounded: no per-event growth (200 jobs, ~3000 events) beyond thread stacks and buffers.
  EXPECT_LT(rss_peak - rss_before, 512 * 1024);
}

TEST_F(OrchestratorTest, MetricsAreServedInPrometheusFormat) {
  OrchestratorConfig c = Config();
  c.metrics_listen = "127.0.0.1:0";
  StartOrchestrator(c);
  auto job = Submit(testing::SearchSpec(3));
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(testing::WaitForEnd(stub_.get(), job->id(), 20).ok());
  const std::string text = orch_->metrics()->Render();
  EXPECT_THAT(text, HasSubstr("pkforge_jobs{state=\"succeeded\"} 1"));
  EXPECT_THAT(text, HasSubstr("pkforge_evaluations_total{status=\"OK\"}"));
  EXPECT_THAT(text, HasSubstr("pkforge_event_commit_seconds_bucket{le=\"+Inf\"}"));
  EXPECT_THAT(text, HasSubstr("pkforge_executors_healthy 1"));
  EXPECT_THAT(text, HasSubstr("pkforge_watch_streams 0"));
  EXPECT_GT(orch_->metrics_port(), 0);
}

TEST_F(OrchestratorTest, ShutdownInterruptsRunningJobsWithReasonShutdown) {
  executor_->set_delay_ms(20000);
  StartOrchestrator();
  auto job = Submit(testing::SearchSpec(8));
  ASSERT_TRUE(job.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  orch_->Shutdown("shutdown");
  orch_.reset();
  auto store = storage::TrajectoryStore::Open(db());
  ASSERT_TRUE(store.ok());
  auto rec = (*store)->GetJob(job->id());
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->state, storage::JobState::kInterrupted);
  EXPECT_EQ(rec->error, "shutdown");
}

}  // namespace
}  // namespace pkforge::orchestrator

namespace pkforge::orchestrator {
namespace {

// Issue #15, item 2: a client chose base_url and api_key_env and the
// orchestrator sent `Authorization: Bearer <value of HOME>` to the client's
// listener. No request may reach a listener the operator did not configure,
// and errors must not reveal which variables exist.
TEST_F(OrchestratorTest, ClientsCannotSendTheOrchestratorsEnvironmentAnywhere) {
  auto attacker = agent::testing::FakeHttpServer::Start();
  ASSERT_TRUE(attacker.ok());
  std::atomic<int> hits{0};
  (*attacker)->SetDefault([&](const agent::testing::RecordedRequest&) {
    ++hits;
    return agent::testing::FakeHttpServer::OpenAiReply("no", 1, 1);
  });
  StartOrchestrator(WithProvider(Config(), "http://127.0.0.1:1/v1"));
  const std::string evil = (*attacker)->base_url() + "/v1";
  std::vector<v1::JobSpec> attempts;
  {
    v1::JobSpec s = testing::LlmSpec("test");
    s.mutable_agent()->mutable_llm()->set_base_url(evil);  // the operator's key, elsewhere
    attempts.push_back(s);
    s.mutable_agent()->mutable_llm()->set_api_key_env("HOME");
    attempts.push_back(s);
    s.mutable_agent()->mutable_llm()->clear_provider_name();
    attempts.push_back(s);
    s.mutable_agent()->mutable_llm()->set_api_key_env("PKF_SURELY_UNSET_VARIABLE");
    attempts.push_back(s);
  }
  std::vector<std::string> messages;
  for (const auto& spec : attempts) {
    auto r = Submit(spec);
    ASSERT_FALSE(r.ok()) << spec.DebugString();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    messages.push_back(std::string(r.status().message()));
  }
  // HOME exists, the other does not: the answers must not tell them apart.
  EXPECT_EQ(messages[1], messages[3]);
  for (const auto& m : messages) {
    EXPECT_EQ(m.find(getenv("HOME")), std::string::npos) << m;
    EXPECT_EQ(m.find("not set"), std::string::npos) << m;
  }
  // Every submission was refused synchronously and no job was stored, so no
  // agent ran that could still call out later.
  EXPECT_EQ(hits.load(), 0) << "a request reached a listener the client chose";
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM jobs"), 0);
}

// Issue #15, item 3: a replay job over a directory of the client's choosing
// returned host files through GetTrajectory(include_sources).
TEST_F(OrchestratorTest, ReplayReadsNoHostFileOutsideTheOperatorsRoot) {
  const std::string root = dir_ + "/root";
  const std::string outside = dir_ + "/outside";
  std::filesystem::create_directories(root + "/cands");
  std::filesystem::create_directories(outside);
  std::ofstream(outside + "/secret.cc") << "// TOP-SECRET host file\n";
  std::ofstream(root + "/cands/ok.cc") << "// fine\n";
  std::filesystem::create_symlink(outside + "/secret.cc", root + "/cands/link.cc");
  std::filesystem::create_directory_symlink(outside, root + "/escape");
  OrchestratorConfig c = Config();
  c.replay_root = root;
  StartOrchestrator(c);
  auto replay_dir = [](const std::string& d) {
    v1::JobSpec s = testing::SearchSpec(0, 30);
    s.mutable_budget()->set_max_evaluations(0);
    s.mutable_agent()->set_kind(v1::AGENT_KIND_REPLAY);
    s.mutable_agent()->set_replay_dir(d);
    return s;
  };
  for (const std::string& d : {outside, root + "/../outside", std::string("../outside"),
                               std::string("escape"), root + "/escape", std::string("/etc")}) {
    auto r = Submit(replay_dir(d));
    ASSERT_FALSE(r.ok()) << d;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("spec.agent.replay_dir")) << d;
  }
  // One answer for a path outside the root that exists and for one that
  // does not (two told a client which paths exist: API fuzzing, session 16).
  auto exists = Submit(replay_dir(outside));
  auto missing = Submit(replay_dir(dir_ + "/no-such-dir"));
  ASSERT_FALSE(exists.ok());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(exists.status().code(), missing.status().code());
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("is not a directory under the replay root"));
  EXPECT_THAT(std::string(exists.status().message()),
              HasSubstr("is not a directory under the replay root"));
  // Inside the root: the regular file is evaluated, the symlink to the
  // secret is never read.
  auto job = Submit(replay_dir("cands"));
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 30);
  ASSERT_TRUE(done.ok()) << done.status();
  grpc::ClientContext ctx;
  v1::GetTrajectoryRequest req;
  req.set_job_id(job->id());
  req.set_include_sources(true);
  v1::Trajectory traj;
  ASSERT_TRUE(stub_->GetTrajectory(&ctx, req, &traj).ok());
  ASSERT_EQ(traj.candidates_size(), 1);
  EXPECT_EQ(traj.candidates(0).source(), "// fine\n");
  EXPECT_EQ(Count(db(), "SELECT COUNT(*) FROM candidates WHERE source LIKE '%TOP-SECRET%'"), 0);
}

TEST_F(OrchestratorTest, ReplaySourcesTravelInTheRequestWithoutAReplayRoot) {
  StartOrchestrator();
  v1::JobSpec s = testing::SearchSpec(0, 30);
  s.mutable_budget()->set_max_evaluations(0);
  s.mutable_agent()->set_kind(v1::AGENT_KIND_REPLAY);
  for (int i = 0; i < 3; ++i) {
    auto* src = s.mutable_agent()->add_replay_sources();
    src->set_name("k" + std::to_string(i) + ".cc");
    src->set_source("// inline candidate " + std::to_string(i) + "\n");
  }
  auto job = Submit(s);
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 30);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->evaluations(), 3);
  // GetJob has the sources; ListJobs only their names (red team round 27: a
  // page of stored replay jobs was a 251 MB reply).
  EXPECT_EQ(done->spec().agent().replay_sources(1).source(), "// inline candidate 1\n");
  grpc::ClientContext ctx;
  v1::ListJobsResponse list;
  ASSERT_TRUE(stub_->ListJobs(&ctx, v1::ListJobsRequest(), &list).ok());
  ASSERT_EQ(list.jobs_size(), 1);
  ASSERT_EQ(list.jobs(0).spec().agent().replay_sources_size(), 3);
  EXPECT_EQ(list.jobs(0).spec().agent().replay_sources(1).name(), "k1.cc");
  EXPECT_TRUE(list.jobs(0).spec().agent().replay_sources(1).source().empty());
}

}  // namespace
}  // namespace pkforge::orchestrator
