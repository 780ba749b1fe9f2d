#include "storage/store.h"

#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/ids.h"
#include "common/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pkforge::storage {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string MakeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "store_test.XXXXXX").string();
  char* dir = mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr);
  return tmpl;
}

JobRecord MakeJob(std::string problem = "allreduce", std::string model = "gpt-x",
                  std::string label = "exp1") {
  JobRecord j;
  j.id = NewId("job");
  j.spec_json = R"({"problem":")" + problem + R"("})";
  j.problem = std::move(problem);
  j.backend = "cuda";
  j.world_size = 2;
  j.dtype = "bf16";
  j.agent_kind = "llm";
  j.model = std::move(model);
  j.strategy = "sequential";
  j.label = std::move(label);
  j.created_wall_us = 1'700'000'000'000'000;
  j.budget_wall_s = 3600;
  return j;
}

CandidateRecord MakeCandidate(const std::string& source) {
  CandidateRecord c;
  c.source = source;
  c.sha256 = Sha256Hex(source);
  c.backend = "cuda";
  c.first_seen_wall_us = 1'700'000'000'000'001;
  return c;
}

EvaluationRecord MakeEval(const std::string& job_id, const std::string& sha,
                          std::optional<double> speedup, bool correct = true,
                          int64_t elapsed_ms = 1000) {
  EvaluationRecord e;
  e.id = NewId("eval");
  e.job_id = job_id;
  e.candidate_sha256 = sha;
  e.status = correct ? "OK" : "WRONG_OUTPUT";
  e.correct = correct;
  e.speedup = speedup;
  e.candidate_median_us = 10.0;
  e.reference_median_us = speedup ? 10.0 * *speedup : 10.0;
  e.roofline_fraction = 0.5;
  e.result_json = R"({"status":"OK"})";
  e.executor = "exec-0:7000";
  e.queue_ms = 1.5;
  e.compile_ms = 1200.25;
  e.run_ms = 3000.5;
  e.wall_us = 1'700'000'000'100'000;
  e.elapsed_ms = elapsed_ms;
  return e;
}

EventRecord MakeEvent(const std::string& job_id, std::string payload,
                      std::string type = "llm_call") {
  EventRecord e;
  e.job_id = job_id;
  e.wall_us = 1'700'000'000'200'000;
  e.elapsed_ms = 42;
  e.type = std::move(type);
  e.payload_json = std::move(payload);
  return e;
}

LlmCallRecord MakeLlmCall(const std::string& job_id, const std::string& turn_id) {
  LlmCallRecord c;
  c.id = NewId("llm");
  c.job_id = job_id;
  c.turn_id = turn_id;
  c.provider = "openai";
  c.model = "gpt-x";
  c.prompt = R"([{"role":"user","content":"write a kernel"}])";
  c.reply = "```cuda\n__global__ void k() {}\n```";
  c.prompt_tokens = 100;
  c.completion_tokens = 20;
  c.latency_ms = 50;
  c.cost_usd = 0.001;
  c.wall_us = 1'700'000'000'300'000;
  c.elapsed_ms = 15;
  return c;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    path_ = dir_ + "/traj.db";
    auto store = TrajectoryStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(store).value();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string NewJob(JobRecord job = MakeJob()) {
    EXPECT_TRUE(store_->CreateJob(job).ok());
    return job.id;
  }

  // Counts rows of `table` through a separate raw connection, so "writes
  // nothing" is checked against the file rather than the store's own view.
  int64_t CountRows(const std::string& table) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    std::string sql = "SELECT COUNT(*) FROM " + table;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
  }

  std::string dir_;
  std::string path_;
  std::unique_ptr<TrajectoryStore> store_;
};

// ------------------------------------------------------------------- basics

TEST(JobStateTest, NamesRoundTripAndTerminality) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                     JobState::kCancelled, JobState::kInterrupted}) {
    auto parsed = ParseJobState(JobStateName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_EQ(JobStateName(JobState::kCancelled), "cancelled");
  EXPECT_FALSE(ParseJobState("done").ok());
  EXPECT_FALSE(IsTerminal(JobState::kQueued));
  EXPECT_FALSE(IsTerminal(JobState::kRunning));
  EXPECT_TRUE(IsTerminal(JobState::kSucceeded));
  EXPECT_TRUE(IsTerminal(JobState::kInterrupted));
}

TEST_F(StoreTest, OpensAtCurrentSchemaVersionWithWal) {
  auto v = store_->SchemaVersion();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, CurrentSchemaVersion());
  EXPECT_EQ(store_->path(), path_);
  EXPECT_TRUE(std::filesystem::exists(path_ + "-wal"));
}

TEST_F(StoreTest, JobRoundTrip) {
  JobRecord job = MakeJob();
  job.best_speedup = 5.0;  // maintained by the store, ignored on create
  job.best_evaluation_id = NewId("eval");
  ASSERT_TRUE(store_->CreateJob(job).ok());
  auto got = store_->GetJob(job.id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->id, job.id);
  EXPECT_EQ(got->spec_json, job.spec_json);
  EXPECT_EQ(got->problem, "allreduce");
  EXPECT_EQ(got->backend, "cuda");
  EXPECT_EQ(got->world_size, 2);
  EXPECT_EQ(got->dtype, "bf16");
  EXPECT_EQ(got->agent_kind, "llm");
  EXPECT_EQ(got->model, "gpt-x");
  EXPECT_EQ(got->strategy, "sequential");
  EXPECT_EQ(got->label, "exp1");
  EXPECT_EQ(got->state, JobState::kQueued);
  EXPECT_EQ(got->created_wall_us, job.created_wall_us);
  EXPECT_EQ(got->started_wall_us, 0);
  EXPECT_EQ(got->finished_wall_us, 0);
  EXPECT_DOUBLE_EQ(got->budget_wall_s, 3600);
  EXPECT_FALSE(got->best_speedup.has_value());
  EXPECT_EQ(got->best_evaluation_id, "");

  EXPECT_TRUE(absl::IsAlreadyExists(store_->CreateJob(job)));
  EXPECT_TRUE(absl::IsNotFound(store_->GetJob(NewId("job")).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->GetJob("nope").status()));
}

TEST_F(StoreTest, ZeroCreatedTimeMeansNow) {
  FakeClock clock(1'800'000'000'000'000);
  store_.reset();
  TrajectoryStore::Options opts;
  opts.clock = &clock;
  auto store = TrajectoryStore::Open(path_, opts);
  ASSERT_TRUE(store.ok());
  JobRecord job = MakeJob();
  job.created_wall_us = 0;
  ASSERT_TRUE((*store)->CreateJob(job).ok());
  EXPECT_EQ((*store)->GetJob(job.id)->created_wall_us, 1'800'000'000'000'000);
}

// SubmitJob's idempotency key: a non-empty client_request_id names at most one
// job, durably; '' means "none" and never collides.
TEST_F(StoreTest, ClientRequestIdIsUniqueWhenNonEmptyAndFound) {
  JobRecord first = MakeJob();
  first.client_request_id = "abc";
  ASSERT_TRUE(store_->CreateJob(first).ok());
  EXPECT_EQ(store_->GetJob(first.id)->client_request_id, "abc");

  // Same id, another job: refused, naming the key and the job that holds it,
  // and nothing is written.
  JobRecord dup = MakeJob("alltoall");
  dup.client_request_id = "abc";
  absl::Status s = store_->CreateJob(dup);
  EXPECT_TRUE(absl::IsAlreadyExists(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("client_request_id"));
  EXPECT_THAT(std::string(s.message()), HasSubstr(first.id));
  EXPECT_TRUE(absl::IsNotFound(store_->GetJob(dup.id).status()));
  EXPECT_EQ(CountRows("jobs"), 1);
  // Ids are compared exactly.
  dup.client_request_id = "ABC";
  EXPECT_TRUE(store_->CreateJob(dup).ok());

  // Empty ids never collide, with each other or with anything.
  std::vector<std::string> anonymous;
  for (int i = 0; i < 3; ++i) {
    JobRecord j = MakeJob();
    ASSERT_EQ(j.client_request_id, "");
    ASSERT_TRUE(store_->CreateJob(j).ok());
    EXPECT_EQ(store_->GetJob(j.id)->client_request_id, "");
    anonymous.push_back(j.id);
  }
  EXPECT_EQ(CountRows("jobs"), 5);

  auto found = store_->FindJobByClientRequestId("abc");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->id, first.id);
  EXPECT_EQ((*found)->problem, "allreduce");
  EXPECT_EQ((*found)->client_request_id, "abc");
  EXPECT_EQ((*store_->FindJobByClientRequestId("ABC"))->id, dup.id);
  // Absence is an answer, not an error; '' identifies nothing.
  auto missing = store_->FindJobByClientRequestId("abd");
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_FALSE(missing->has_value());
  EXPECT_TRUE(absl::IsInvalidArgument(store_->FindJobByClientRequestId("").status()));
  // ListJobs returns the key too.
  JobFilter all;
  auto listed = store_->ListJobs(all);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 5u);
  EXPECT_EQ((*listed)[0].client_request_id, "abc");

  // The key survives a reopen (what an orchestrator restart relies on) and
  // still blocks a second job.
  store_.reset();
  auto reopened = TrajectoryStore::Open(path_);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  store_ = std::move(reopened).value();
  EXPECT_EQ((*store_->FindJobByClientRequestId("abc"))->id, first.id);
  JobRecord after = MakeJob();
  after.client_request_id = "abc";
  EXPECT_TRUE(absl::IsAlreadyExists(store_->CreateJob(after)));
  EXPECT_EQ(CountRows("jobs"), 5);
}

// The unique index is the schema's own guarantee (for anything writing the
// file directly): a second non-empty id is a constraint error, '' is not.
TEST_F(StoreTest, ClientRequestIdUniqueIndexGuardsDirectWrites) {
  JobRecord job = MakeJob();
  job.client_request_id = "abc";
  ASSERT_TRUE(store_->CreateJob(job).ok());
  NewJob();  // client_request_id ''
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  auto insert = [&](const std::string& rid) {
    std::string sql =
        "INSERT INTO jobs (id, spec_json, problem, backend, world_size, dtype, agent_kind, state, "
        "created_wall_us, client_request_id) VALUES ('" +
        NewId("job") + "', '{}', 'p', 'host', 1, 'f32', 'search', 'queued', 1, '" + rid + "')";
    return sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  };
  EXPECT_EQ(insert("abc"), SQLITE_CONSTRAINT);
  EXPECT_EQ(sqlite3_extended_errcode(db), SQLITE_CONSTRAINT_UNIQUE);
  EXPECT_EQ(insert(""), SQLITE_OK);
  EXPECT_EQ(insert(""), SQLITE_OK);
  EXPECT_EQ(insert("xyz"), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(CountRows("jobs"), 5);
}

// Many threads creating jobs with one client_request_id at once (so several
// land in one group-commit batch): exactly one wins, the rest get
// ALREADY_EXISTS alone and the batch's other writes go ahead.
TEST_F(StoreTest, ConcurrentCreatesWithOneClientRequestIdStoreOneJob) {
  constexpr int kThreads = 16;
  std::atomic<int> created{0};
  std::atomic<int> refused{0};
  std::atomic<int> other{0};
  std::vector<std::string> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      JobRecord j = MakeJob();
      j.client_request_id = "same";
      ids[t] = j.id;
      absl::Status s = store_->CreateJob(j);
      if (s.ok()) {
        ++created;
      } else if (absl::IsAlreadyExists(s)) {
        ++refused;
      } else {
        ++other;
      }
      // An unrelated write in the same batches must not be affected.
      if (!store_->CreateJob(MakeJob()).ok()) ++other;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(created.load(), 1);
  EXPECT_EQ(refused.load(), kThreads - 1);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(CountRows("jobs"), 1 + kThreads);
  auto found = store_->FindJobByClientRequestId("same");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_NE(std::find(ids.begin(), ids.end(), (*found)->id), ids.end());
}

TEST_F(StoreTest, UpdateJobStateSetsTimesAndTerminalIsFinal) {
  std::string id = NewJob();
  ASSERT_TRUE(store_->UpdateJobState(id, JobState::kRunning, "", 100).ok());
  auto j = store_->GetJob(id);
  EXPECT_EQ(j->state, JobState::kRunning);
  EXPECT_EQ(j->started_wall_us, 100);
  EXPECT_EQ(j->finished_wall_us, 0);

  ASSERT_TRUE(store_->UpdateJobState(id, JobState::kFailed, "compile farm down", 250).ok());
  j = store_->GetJob(id);
  EXPECT_EQ(j->state, JobState::kFailed);
  EXPECT_EQ(j->started_wall_us, 100);
  EXPECT_EQ(j->finished_wall_us, 250);
  EXPECT_EQ(j->error, "compile farm down");

  for (JobState s :
       {JobState::kRunning, JobState::kQueued, JobState::kSucceeded, JobState::kFailed}) {
    absl::Status st = store_->UpdateJobState(id, s, "late", 300);
    EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
    EXPECT_THAT(std::string(st.message()), HasSubstr("failed"));
  }
  j = store_->GetJob(id);
  EXPECT_EQ(j->state, JobState::kFailed);
  EXPECT_EQ(j->finished_wall_us, 250);
  EXPECT_EQ(j->error, "compile farm down");

  EXPECT_TRUE(absl::IsNotFound(store_->UpdateJobState(NewId("job"), JobState::kRunning)));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->UpdateJobState("job_x", JobState::kRunning)));
  std::string other = NewJob();
  EXPECT_TRUE(absl::IsInvalidArgument(store_->UpdateJobState(other, JobState::kRunning, "", -5)));
  EXPECT_EQ(store_->GetJob(other)->state, JobState::kQueued);
}

TEST_F(StoreTest, ListJobsFiltersAndPaginates) {
  std::vector<std::string> ids;
  for (int i = 0; i < 25; ++i) {
    JobRecord j = MakeJob(i % 2 == 0 ? "allreduce" : "alltoall", i % 3 == 0 ? "m-a" : "m-b",
                          i < 10 ? "first" : "second");
    ASSERT_TRUE(store_->CreateJob(j).ok());
    ids.push_back(j.id);
  }
  ASSERT_TRUE(store_->UpdateJobState(ids[0], JobState::kRunning).ok());
  ASSERT_TRUE(store_->UpdateJobState(ids[1], JobState::kSucceeded).ok());
  std::sort(ids.begin(), ids.end());

  // Pagination walks every job exactly once, in id order.
  std::vector<std::string> seen;
  JobFilter f;
  f.limit = 10;
  int pages = 0;
  while (true) {
    auto page = store_->ListJobs(f);
    ASSERT_TRUE(page.ok()) << page.status();
    if (page->empty()) break;
    ++pages;
    EXPECT_LE(page->size(), 10u);
    for (const auto& j : *page) seen.push_back(j.id);
    f.after_id = page->back().id;
  }
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen, ids);

  JobFilter by_problem;
  by_problem.problem = "alltoall";
  EXPECT_EQ(store_->ListJobs(by_problem)->size(), 12u);
  JobFilter combo;
  combo.problem = "allreduce";
  combo.model = "m-a";
  combo.label = "first";
  auto c = store_->ListJobs(combo);
  ASSERT_TRUE(c.ok());
  for (const auto& j : *c) {
    EXPECT_EQ(j.problem, "allreduce");
    EXPECT_EQ(j.model, "m-a");
    EXPECT_EQ(j.label, "first");
  }
  EXPECT_EQ(c->size(), 2u);  // i = 0 and 6
  JobFilter by_state;
  by_state.state = JobState::kQueued;
  EXPECT_EQ(store_->ListJobs(by_state)->size(), 23u);
  by_state.state = JobState::kSucceeded;
  EXPECT_EQ(store_->ListJobs(by_state)->size(), 1u);
  JobFilter by_kind;
  by_kind.agent_kind = "search";
  EXPECT_TRUE(store_->ListJobs(by_kind)->empty());
  JobFilter by_strategy;
  by_strategy.strategy = "sequential";
  EXPECT_EQ(store_->ListJobs(by_strategy)->size(), 25u);

  auto unfinished = store_->ListUnfinishedJobs();
  ASSERT_TRUE(unfinished.ok());
  EXPECT_EQ(unfinished->size(), 24u);

  JobFilter bad;
  bad.limit = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->ListJobs(bad).status()));
  bad.limit = 100001;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->ListJobs(bad).status()));
  JobFilter bad_after;
  bad_after.after_id = "garbage";
  EXPECT_TRUE(absl::IsInvalidArgument(store_->ListJobs(bad_after).status()));
}

// --------------------------------------------------------------- trajectory

TEST_F(StoreTest, TurnsAndLlmCallsRoundTrip) {
  std::string job = NewJob();
  TurnRecord t1{NewId("turn"), job, 1, 2000, 20, "refine"};
  TurnRecord t0{NewId("turn"), job, 0, 1000, 10, "initial"};
  ASSERT_TRUE(store_->AddTurn(t1).ok());
  ASSERT_TRUE(store_->AddTurn(t0).ok());
  TurnRecord dup_index{NewId("turn"), job, 1, 3000, 30, ""};
  EXPECT_TRUE(absl::IsAlreadyExists(store_->AddTurn(dup_index)));
  EXPECT_TRUE(absl::IsAlreadyExists(store_->AddTurn(t0)));
  auto turns = store_->ListTurns(job);
  ASSERT_TRUE(turns.ok());
  ASSERT_EQ(turns->size(), 2u);
  EXPECT_EQ((*turns)[0].id, t0.id);
  EXPECT_EQ((*turns)[0].note, "initial");
  EXPECT_EQ((*turns)[1].id, t1.id);
  EXPECT_EQ((*turns)[1].started_wall_us, 2000);
  EXPECT_EQ((*turns)[1].elapsed_ms, 20);

  LlmCallRecord call;
  call.id = NewId("llm");
  call.job_id = job;
  call.turn_id = t0.id;
  call.provider = "openai";
  call.model = "gpt-x";
  call.prompt = R"([{"role":"user","content":"write a kernel"}])";
  call.reply = std::string("line1\nline2\0binary", 18);
  call.prompt_tokens = 1234;
  call.completion_tokens = 567;
  call.latency_ms = 8123.5;
  call.cost_usd = 0.0125;
  call.attempts = 3;
  call.error = "";
  call.wall_us = 1'700'000'000'300'000;
  call.elapsed_ms = 15;
  ASSERT_TRUE(store_->AddLlmCall(call).ok());
  LlmCallRecord no_turn = call;
  no_turn.id = NewId("llm");
  no_turn.turn_id = "";
  no_turn.elapsed_ms = 5;
  no_turn.error = "rate limited";
  ASSERT_TRUE(store_->AddLlmCall(no_turn).ok());

  auto calls = store_->ListLlmCalls(job);
  ASSERT_TRUE(calls.ok());
  ASSERT_EQ(calls->size(), 2u);
  EXPECT_EQ((*calls)[0].id, no_turn.id);  // elapsed order
  EXPECT_EQ((*calls)[0].turn_id, "");
  EXPECT_EQ((*calls)[0].error, "rate limited");
  const LlmCallRecord& c = (*calls)[1];
  EXPECT_EQ(c.id, call.id);
  EXPECT_EQ(c.turn_id, t0.id);
  EXPECT_EQ(c.provider, "openai");
  EXPECT_EQ(c.prompt, call.prompt);
  EXPECT_EQ(c.reply, call.reply);
  EXPECT_EQ(c.prompt_tokens, 1234);
  EXPECT_EQ(c.completion_tokens, 567);
  EXPECT_DOUBLE_EQ(c.latency_ms, 8123.5);
  EXPECT_DOUBLE_EQ(c.cost_usd, 0.0125);
  EXPECT_EQ(c.attempts, 3);
  EXPECT_EQ(c.wall_us, call.wall_us);

  // A turn of another job, or an unknown turn, is refused.
  std::string other = NewJob();
  LlmCallRecord wrong_turn = call;
  wrong_turn.id = NewId("llm");
  wrong_turn.job_id = other;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddLlmCall(wrong_turn)));
  wrong_turn.turn_id = NewId("turn");
  EXPECT_TRUE(absl::IsNotFound(store_->AddLlmCall(wrong_turn)));
  EXPECT_TRUE(store_->ListLlmCalls(other)->empty());
  EXPECT_TRUE(absl::IsNotFound(store_->ListTurns(NewId("job")).status()));
}

TEST_F(StoreTest, CandidatesAreDeduplicatedAndHashChecked) {
  CandidateRecord c = MakeCandidate("__global__ void k() {}");
  auto first = store_->PutCandidate(c);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(*first);
  CandidateRecord again = c;
  again.first_seen_wall_us = 1'800'000'000'000'000;
  auto second = store_->PutCandidate(again);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(*second);
  auto got = store_->GetCandidate(c.sha256);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->source, c.source);
  EXPECT_EQ(got->backend, "cuda");
  EXPECT_EQ(got->first_seen_wall_us, c.first_seen_wall_us);  // the first sighting wins
  EXPECT_EQ(CountRows("candidates"), 1);

  CandidateRecord lying = MakeCandidate("a");
  lying.source = "b";
  absl::Status s = store_->PutCandidate(lying).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(std::string(s.message()), HasSubstr("sha256"));
  CandidateRecord upper = MakeCandidate("c");
  for (char& ch : upper.sha256) ch = static_cast<char>(toupper(ch));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->PutCandidate(upper).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->PutCandidate(MakeCandidate("")).status()));
  EXPECT_EQ(CountRows("candidates"), 1);
  EXPECT_TRUE(absl::IsNotFound(store_->GetCandidate(Sha256Hex("zzz")).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->GetCandidate("abc").status()));
}

TEST_F(StoreTest, EvaluationsRoundTripAndMaintainBestSpeedup) {
  std::string job = NewJob();
  CandidateRecord c1 = MakeCandidate("k1");
  CandidateRecord c2 = MakeCandidate("k2");
  ASSERT_TRUE(store_->PutCandidate(c1).ok());
  ASSERT_TRUE(store_->PutCandidate(c2).ok());
  TurnRecord turn{NewId("turn"), job, 0, 1, 0, ""};
  ASSERT_TRUE(store_->AddTurn(turn).ok());

  EvaluationRecord e1 = MakeEval(job, c1.sha256, 1.2, true, 3000);
  e1.turn_id = turn.id;
  ASSERT_TRUE(store_->AddEvaluation(e1).ok());
  EXPECT_DOUBLE_EQ(*store_->GetJob(job)->best_speedup, 1.2);
  EXPECT_EQ(store_->GetJob(job)->best_evaluation_id, e1.id);

  // Faster but wrong: no effect on best.
  EvaluationRecord wrong = MakeEval(job, c2.sha256, 9.0, false, 4000);
  ASSERT_TRUE(store_->AddEvaluation(wrong).ok());
  EXPECT_DOUBLE_EQ(*store_->GetJob(job)->best_speedup, 1.2);

  EvaluationRecord e2 = MakeEval(job, c2.sha256, 1.7, true, 5000);
  ASSERT_TRUE(store_->AddEvaluation(e2).ok());
  EXPECT_DOUBLE_EQ(*store_->GetJob(job)->best_speedup, 1.7);
  EXPECT_EQ(store_->GetJob(job)->best_evaluation_id, e2.id);

  // Slower or equal: the earlier best keeps the credit.
  ASSERT_TRUE(store_->AddEvaluation(MakeEval(job, c1.sha256, 1.1, true, 6000)).ok());
  ASSERT_TRUE(store_->AddEvaluation(MakeEval(job, c1.sha256, 1.7, true, 7000)).ok());
  EXPECT_EQ(store_->GetJob(job)->best_evaluation_id, e2.id);

  // Correct but untimed: recorded, best untouched.
  EvaluationRecord untimed = MakeEval(job, c1.sha256, std::nullopt, true, 500);
  untimed.candidate_median_us.reset();
  untimed.reference_median_us.reset();
  untimed.roofline_fraction.reset();
  ASSERT_TRUE(store_->AddEvaluation(untimed).ok());
  EXPECT_EQ(store_->GetJob(job)->best_evaluation_id, e2.id);

  auto evals = store_->ListEvaluations(job);
  ASSERT_TRUE(evals.ok());
  ASSERT_EQ(evals->size(), 6u);
  for (size_t i = 1; i < evals->size(); ++i) {
    EXPECT_LE((*evals)[i - 1].elapsed_ms, (*evals)[i].elapsed_ms);
  }
  const EvaluationRecord& u = (*evals)[0];
  EXPECT_EQ(u.id, untimed.id);
  EXPECT_FALSE(u.speedup.has_value());
  EXPECT_FALSE(u.candidate_median_us.has_value());
  EXPECT_FALSE(u.roofline_fraction.has_value());
  const EvaluationRecord& g = (*evals)[1];
  EXPECT_EQ(g.id, e1.id);
  EXPECT_EQ(g.turn_id, turn.id);
  EXPECT_EQ(g.candidate_sha256, c1.sha256);
  EXPECT_EQ(g.status, "OK");
  EXPECT_TRUE(g.correct);
  EXPECT_DOUBLE_EQ(*g.speedup, 1.2);
  EXPECT_DOUBLE_EQ(*g.candidate_median_us, 10.0);
  EXPECT_DOUBLE_EQ(*g.reference_median_us, 12.0);
  EXPECT_DOUBLE_EQ(*g.roofline_fraction, 0.5);
  EXPECT_EQ(g.result_json, e1.result_json);
  EXPECT_EQ(g.executor, "exec-0:7000");
  EXPECT_DOUBLE_EQ(g.queue_ms, 1.5);
  EXPECT_DOUBLE_EQ(g.compile_ms, 1200.25);
  EXPECT_DOUBLE_EQ(g.run_ms, 3000.5);
  EXPECT_EQ(g.wall_us, e1.wall_us);
  EXPECT_EQ((*evals)[2].status, "WRONG_OUTPUT");
  EXPECT_FALSE((*evals)[2].correct);

  EXPECT_TRUE(absl::IsAlreadyExists(store_->AddEvaluation(e1)));
}

// Successive-halving rungs at other iteration counts and the final
// re-measurement are stored with their settings and role, and stay out of
// the job's best and its evaluation count (issue #18 item 5).
TEST_F(StoreTest, RungsAtOtherSettingsAndTheFinalMeasurementStayOutOfTheBest) {
  std::string job = NewJob();
  CandidateRecord a = MakeCandidate("rung winner");
  CandidateRecord b = MakeCandidate("official");
  ASSERT_TRUE(store_->PutCandidate(a).ok());
  ASSERT_TRUE(store_->PutCandidate(b).ok());
  EvaluationRecord rung = MakeEval(job, a.sha256, 10.2, true, 100);
  rung.timed_iters = 10;
  rung.trials = 5;
  rung.comparable = false;
  ASSERT_TRUE(store_->AddEvaluation(rung).ok());
  EXPECT_FALSE(store_->GetJob(job)->best_speedup.has_value()) << "a rung made the best";
  EvaluationRecord official = MakeEval(job, b.sha256, 2.7, true, 200);
  ASSERT_TRUE(store_->AddEvaluation(official).ok());
  EXPECT_DOUBLE_EQ(*store_->GetJob(job)->best_speedup, 2.7);
  EvaluationRecord final_eval = MakeEval(job, a.sha256, 3.1, true, 300);
  final_eval.role = kRoleFinal;
  final_eval.roofline_fraction = 0.4;
  ASSERT_TRUE(store_->AddEvaluation(final_eval).ok());
  EXPECT_DOUBLE_EQ(*store_->GetJob(job)->best_speedup, 2.7) << "the final measurement made the best";
  EXPECT_EQ(store_->GetJob(job)->best_evaluation_id, official.id);

  auto evals = store_->ListEvaluations(job);
  ASSERT_TRUE(evals.ok());
  ASSERT_EQ(evals->size(), 3u);
  EXPECT_EQ((*evals)[0].timed_iters, 10);
  EXPECT_EQ((*evals)[0].trials, 5);
  EXPECT_FALSE((*evals)[0].comparable);
  EXPECT_EQ((*evals)[0].role, "search");
  EXPECT_TRUE((*evals)[1].comparable);
  EXPECT_EQ((*evals)[2].role, "final");

  auto s = store_->GetJobStats(job);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->evaluations, 2);
  EXPECT_EQ(s->last_evaluation_status, "OK");
  EXPECT_EQ(s->best_candidate_sha256, b.sha256);
  EXPECT_EQ(s->other_evaluations, 1);
  EXPECT_DOUBLE_EQ(s->other_best_speedup.value_or(0), 10.2);
  EXPECT_EQ(s->final_evaluation_id, final_eval.id);
  EXPECT_EQ(s->final_status, "OK");
  EXPECT_EQ(s->final_candidate_sha256, a.sha256);
  EXPECT_DOUBLE_EQ(s->final_speedup.value_or(0), 3.1);
  EXPECT_DOUBLE_EQ(s->final_roofline_fraction.value_or(0), 0.4);

  EvaluationRecord bad = MakeEval(job, a.sha256, 1.0, true, 400);
  bad.role = "rung";
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddEvaluation(bad)));
}

// --------------------------------------------------------------- validation

TEST_F(StoreTest, InvalidInputWritesNothing) {
  std::string job = NewJob();
  CandidateRecord c = MakeCandidate("k");
  ASSERT_TRUE(store_->PutCandidate(c).ok());

  struct Case {
    const char* name;
    std::function<void(EvaluationRecord&)> mutate;
    absl::StatusCode code;
    const char* field;
  };
  std::vector<Case> eval_cases = {
      {"nan speedup", [](auto& e) { e.speedup = kNaN; }, absl::StatusCode::kInvalidArgument,
       "speedup"},
      {"inf speedup", [](auto& e) { e.speedup = kInf; }, absl::StatusCode::kInvalidArgument,
       "speedup"},
      {"zero speedup", [](auto& e) { e.speedup = 0.0; }, absl::StatusCode::kInvalidArgument,
       "speedup"},
      {"negative speedup", [](auto& e) { e.speedup = -1.0; }, absl::StatusCode::kInvalidArgument,
       "speedup"},
      {"nan median", [](auto& e) { e.candidate_median_us = kNaN; },
       absl::StatusCode::kInvalidArgument, "candidate_median_us"},
      {"nan ref median", [](auto& e) { e.reference_median_us = kNaN; },
       absl::StatusCode::kInvalidArgument, "reference_median_us"},
      {"negative elapsed", [](auto& e) { e.elapsed_ms = -1; }, absl::StatusCode::kInvalidArgument,
       "elapsed_ms"},
      {"negative wall", [](auto& e) { e.wall_us = -1; }, absl::StatusCode::kInvalidArgument,
       "wall_us"},
      {"negative queue", [](auto& e) { e.queue_ms = -0.5; }, absl::StatusCode::kInvalidArgument,
       "queue_ms"},
      {"nan compile", [](auto& e) { e.compile_ms = kNaN; }, absl::StatusCode::kInvalidArgument,
       "compile_ms"},
      {"bad id", [](auto& e) { e.id = "eval_123"; }, absl::StatusCode::kInvalidArgument, "id"},
      {"wrong id prefix", [](auto& e) { e.id = NewId("job"); }, absl::StatusCode::kInvalidArgument,
       "id"},
      {"bad job id", [](auto& e) { e.job_id = "job"; }, absl::StatusCode::kInvalidArgument,
       "job_id"},
      {"bad turn id", [](auto& e) { e.turn_id = "turn_?"; }, absl::StatusCode::kInvalidArgument,
       "turn_id"},
      {"empty status", [](auto& e) { e.status = ""; }, absl::StatusCode::kInvalidArgument,
       "status"},
      {"correct mismatch", [](auto& e) { e.status = "TIMEOUT"; },
       absl::StatusCode::kInvalidArgument, "correct"},
      {"unknown job", [](auto& e) { e.job_id = NewId("job"); }, absl::StatusCode::kNotFound, "job"},
      {"unknown turn", [](auto& e) { e.turn_id = NewId("turn"); }, absl::StatusCode::kNotFound,
       "turn"},
      {"unknown candidate", [&](auto& e) { e.candidate_sha256 = Sha256Hex("other"); },
       absl::StatusCode::kNotFound, "candidate"},
  };
  for (const Case& tc : eval_cases) {
    EvaluationRecord e = MakeEval(job, c.sha256, 2.0);
    tc.mutate(e);
    absl::Status s = store_->AddEvaluation(e);
    EXPECT_EQ(s.code(), tc.code) << tc.name << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(tc.field)) << tc.name;
  }
  EXPECT_EQ(CountRows("evaluations"), 0);
  EXPECT_FALSE(store_->GetJob(job)->best_speedup.has_value());

  // Jobs.
  JobRecord j = MakeJob();
  j.created_wall_us = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->CreateJob(j)));
  j = MakeJob();
  j.budget_wall_s = kNaN;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->CreateJob(j)));
  j = MakeJob();
  j.problem = "";
  absl::Status s = store_->CreateJob(j);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(std::string(s.message()), HasSubstr("problem"));
  j = MakeJob();
  j.world_size = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->CreateJob(j)));
  j = MakeJob();
  j.id = NewId("eval");
  EXPECT_TRUE(absl::IsInvalidArgument(store_->CreateJob(j)));
  EXPECT_EQ(CountRows("jobs"), 1);

  // Turns and LLM calls.
  TurnRecord t{NewId("turn"), job, 0, 0, -3, ""};
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddTurn(t)));
  t = {NewId("turn"), job, -1, 0, 0, ""};
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddTurn(t)));
  t = {NewId("turn"), NewId("job"), 0, 0, 0, ""};
  EXPECT_TRUE(absl::IsNotFound(store_->AddTurn(t)));
  EXPECT_EQ(CountRows("turns"), 0);

  LlmCallRecord call;
  call.id = NewId("llm");
  call.job_id = job;
  call.provider = "openai";
  call.model = "m";
  call.latency_ms = kNaN;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddLlmCall(call)));
  call.latency_ms = 1;
  call.prompt_tokens = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddLlmCall(call)));
  call.prompt_tokens = 1;
  call.attempts = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddLlmCall(call)));
  call.attempts = 1;
  call.provider = "";
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AddLlmCall(call)));
  call.provider = "openai";
  call.job_id = NewId("job");
  EXPECT_TRUE(absl::IsNotFound(store_->AddLlmCall(call)));
  EXPECT_EQ(CountRows("llm_calls"), 0);

  // Events.
  EventRecord ev = MakeEvent(job, "{}");
  ev.elapsed_ms = -1;
  s = store_->AppendEvent(ev).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(std::string(s.message()), HasSubstr("elapsed_ms"));
  ev = MakeEvent(job, "{}");
  ev.wall_us = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AppendEvent(ev).status()));
  ev = MakeEvent(job, "{}", "");
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AppendEvent(ev).status()));
  ev = MakeEvent("job_bad", "{}");
  EXPECT_TRUE(absl::IsInvalidArgument(store_->AppendEvent(ev).status()));
  ev = MakeEvent(NewId("job"), "{}");
  s = store_->AppendEvent(ev).status();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_EQ(CountRows("events"), 0);
  EXPECT_EQ(*store_->LastEventSeq(job), 0);
  // The job's sequence is unaffected by the failures.
  EXPECT_EQ(*store_->AppendEvent(MakeEvent(job, "{}")), 1);
}

// ------------------------------------------------------------------- events

TEST_F(StoreTest, EventsGetSequentialSeqsAndReadAfterWithLimit) {
  std::string a = NewJob();
  std::string b = NewJob();
  for (int i = 1; i <= 20; ++i) {
    auto seq = store_->AppendEvent(MakeEvent(a, "{\"i\":" + std::to_string(i) + "}"));
    ASSERT_TRUE(seq.ok()) << seq.status();
    EXPECT_EQ(*seq, i);
    if (i % 4 == 0) {
      EXPECT_EQ(*store_->AppendEvent(MakeEvent(b, "{}")), i / 4);
    }
  }
  EXPECT_EQ(*store_->LastEventSeq(a), 20);
  EXPECT_EQ(*store_->LastEventSeq(b), 5);
  EXPECT_TRUE(absl::IsNotFound(store_->LastEventSeq(NewId("job")).status()));

  auto page = store_->ReadEvents(a, 5, 4);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 4u);
  for (int k = 0; k < 4; ++k) {
    const EventRecord& e = (*page)[k];
    EXPECT_EQ(e.seq, 6 + k);
    EXPECT_EQ(e.job_id, a);
    EXPECT_EQ(e.payload_json, "{\"i\":" + std::to_string(6 + k) + "}");
    EXPECT_EQ(e.type, "llm_call");
    EXPECT_EQ(e.wall_us, 1'700'000'000'200'000);
    EXPECT_EQ(e.elapsed_ms, 42);
  }
  EXPECT_EQ(store_->ReadEvents(a, 0)->size(), 20u);
  EXPECT_EQ(store_->ReadEvents(a, 18)->size(), 2u);
  EXPECT_TRUE(store_->ReadEvents(a, 20)->empty());
  EXPECT_TRUE(absl::IsNotFound(store_->ReadEvents(NewId("job"), 0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->ReadEvents(a, -1).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->ReadEvents(a, 0, 0).status()));

  // Events may still be appended after the job ends (e.g. "job_finished").
  ASSERT_TRUE(store_->UpdateJobState(a, JobState::kSucceeded).ok());
  EXPECT_EQ(*store_->AppendEvent(MakeEvent(a, "{}", "job_finished")), 21);
}

TEST_F(StoreTest, JobStatsAggregateTheTrajectory) {
  std::string job = NewJob();
  auto empty = store_->GetJobStats(job);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->turns, 0);
  EXPECT_EQ(empty->evaluations, 0);
  EXPECT_EQ(empty->tokens, 0);
  EXPECT_EQ(empty->last_evaluation_status, "");
  EXPECT_EQ(empty->best_candidate_sha256, "");
  EXPECT_FALSE(empty->best_roofline_fraction.has_value());
  EXPECT_EQ(empty->last_event_seq, 0);

  TurnRecord t0{NewId("turn"), job, 0, 1000, 10, ""};
  TurnRecord t1{NewId("turn"), job, 1, 2000, 20, ""};
  ASSERT_TRUE(store_->AddTurn(t0).ok());
  ASSERT_TRUE(store_->AddTurn(t1).ok());
  for (int i = 0; i < 2; ++i) {
    LlmCallRecord call;
    call.id = NewId("llm");
    call.job_id = job;
    call.provider = "openai";
    call.model = "gpt-x";
    call.prompt_tokens = 100;
    call.completion_tokens = 20 + i;
    call.cost_usd = 0.25;
    ASSERT_TRUE(store_->AddLlmCall(call).ok());
  }
  CandidateRecord fast = MakeCandidate("fast kernel");
  CandidateRecord slow = MakeCandidate("slow kernel");
  ASSERT_TRUE(store_->PutCandidate(fast).ok());
  ASSERT_TRUE(store_->PutCandidate(slow).ok());
  EvaluationRecord best = MakeEval(job, fast.sha256, 2.0, true, 100);
  best.roofline_fraction = 0.75;
  ASSERT_TRUE(store_->AddEvaluation(best).ok());
  ASSERT_TRUE(store_->AddEvaluation(MakeEval(job, slow.sha256, std::nullopt, false, 200)).ok());
  ASSERT_TRUE(store_->AppendEvent(MakeEvent(job, "{}")).ok());
  EventRecord last = MakeEvent(job, "{}");
  last.elapsed_ms = 777;
  ASSERT_TRUE(store_->AppendEvent(last).ok());
  // Another job's rows must not leak into the aggregate.
  std::string other = NewJob();
  ASSERT_TRUE(store_->AddEvaluation(MakeEval(other, fast.sha256, 9.0, true, 50)).ok());

  auto s = store_->GetJobStats(job);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->turns, 2);
  EXPECT_EQ(s->llm_calls, 2);
  EXPECT_EQ(s->tokens, 100 + 20 + 100 + 21);
  EXPECT_DOUBLE_EQ(s->cost_usd, 0.5);
  EXPECT_EQ(s->evaluations, 2);
  EXPECT_EQ(s->last_evaluation_status, "WRONG_OUTPUT");  // latest in elapsed order
  EXPECT_EQ(s->best_candidate_sha256, fast.sha256);
  ASSERT_TRUE(s->best_roofline_fraction.has_value());
  EXPECT_DOUBLE_EQ(*s->best_roofline_fraction, 0.75);
  EXPECT_EQ(s->last_event_seq, 2);
  EXPECT_EQ(s->last_event_elapsed_ms, 777);
  EXPECT_TRUE(absl::IsNotFound(store_->GetJobStats(NewId("job")).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->GetJobStats("nope").status()));
}

TEST_F(StoreTest, DataAndSequenceSurviveReopen) {
  std::string job = NewJob();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store_->AppendEvent(MakeEvent(job, "x")).ok());
  store_.reset();
  auto store = TrajectoryStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = std::move(store).value();
  EXPECT_EQ(store_->GetJob(job)->id, job);
  EXPECT_EQ(*store_->AppendEvent(MakeEvent(job, "y")), 4);
  // Closing the last connection checkpoints and removes the WAL.
  store_.reset();
  EXPECT_FALSE(std::filesystem::exists(path_ + "-wal"));
}

TEST_F(StoreTest, ZeroEventWallTimeMeansNow) {
  std::string job = NewJob();
  EventRecord ev = MakeEvent(job, "{}");
  ev.wall_us = 0;
  ASSERT_TRUE(store_->AppendEvent(ev).ok());
  EXPECT_GT(store_->ReadEvents(job, 0)->at(0).wall_us, 1'600'000'000'000'000);
}

// A failed batch must not leave the in-memory sequence cache ahead of the
// file. We provoke a failure by writing a row behind the store's back (which
// the contract forbids, so it is only a way to make a COMMIT-time constraint
// fail), then check the store recovers with contiguous seqs.
TEST_F(StoreTest, FailedBatchResetsSequenceCache) {
  std::string job = NewJob();
  ASSERT_EQ(*store_->AppendEvent(MakeEvent(job, "a")), 1);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    std::string sql =
        "INSERT INTO events (job_id, seq, wall_us, elapsed_ms, type, payload_json) "
        "VALUES ('" +
        job + "', 2, 1, 1, 'intruder', 'b')";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  absl::Status s = store_->AppendEvent(MakeEvent(job, "c")).status();
  EXPECT_TRUE(absl::IsAlreadyExists(s)) << s;
  auto seq = store_->AppendEvent(MakeEvent(job, "d"));
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(*seq, 3);
  auto events = store_->ReadEvents(job, 0);
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[2].payload_json, "d");
}

// Another process holding the write lock makes BEGIN fail after the busy
// timeout; every caller of that batch gets UNAVAILABLE and nothing is lost
// or skipped afterwards.
TEST_F(StoreTest, WriteLockTimeoutIsUnavailableAndRecoverable) {
  store_.reset();
  TrajectoryStore::Options opts;
  opts.busy_timeout_ms = 50;
  auto store = TrajectoryStore::Open(path_, opts);
  ASSERT_TRUE(store.ok());
  store_ = std::move(store).value();
  std::string job = NewJob();
  ASSERT_EQ(*store_->AppendEvent(MakeEvent(job, "1")), 1);

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  absl::Status s = store_->AppendEvent(MakeEvent(job, "lost")).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_TRUE(absl::IsUnavailable(store_->CreateJob(MakeJob())));
  ASSERT_EQ(sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);

  EXPECT_EQ(*store_->AppendEvent(MakeEvent(job, "2")), 2);
  EXPECT_EQ(store_->ReadEvents(job, 0)->size(), 2u);
}

// ------------------------------------------------------------- concurrency

// 8 threads on their own jobs plus 8 threads on one shared job, all at once,
// while readers poll: every seq is unique and contiguous per job, nothing is
// lost, payloads are intact, and readers only ever see committed prefixes
// that include everything already acknowledged.
TEST_F(StoreTest, ConcurrentAppendsAndReaders) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 500;
  std::vector<std::string> own_jobs;
  for (int t = 0; t < kThreads; ++t) own_jobs.push_back(NewJob());
  const std::string shared = NewJob();

  std::atomic<int64_t> shared_acked{0};  // highest acknowledged count (lower bound)
  std::atomic<bool> writers_done{false};
  std::atomic<int> failures{0};
  // seqs_by_thread[t] = seqs the shared-job thread t got, in call order.
  std::vector<std::vector<int64_t>> shared_seqs(kThreads);
  std::vector<std::vector<int64_t>> own_seqs(kThreads);

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto seq = store_->AppendEvent(MakeEvent(
            own_jobs[t], "{\"t\":" + std::to_string(t) + ",\"i\":" + std::to_string(i) + "}"));
        if (!seq.ok()) {
          ++failures;
          return;
        }
        own_seqs[t].push_back(*seq);
      }
    });
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto seq = store_->AppendEvent(
            MakeEvent(shared, "shared t" + std::to_string(t) + " i" + std::to_string(i), "shared"));
        if (!seq.ok()) {
          ++failures;
          return;
        }
        shared_seqs[t].push_back(*seq);
        // Count of acknowledged events is at least this many; the seq itself
        // may belong to a batch committed together with lower ones.
        int64_t prev = shared_acked.load();
        while (prev < *seq && !shared_acked.compare_exchange_weak(prev, *seq)) {
        }
      }
    });
  }
  std::atomic<int64_t> reads{0};
  std::atomic<int> reader_errors{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      int64_t last_len = 0;
      while (!writers_done.load()) {
        const int64_t acked = shared_acked.load();
        auto events = store_->ReadEvents(shared, 0, 100000);
        if (!events.ok()) {
          ++reader_errors;
          return;
        }
        const int64_t n = static_cast<int64_t>(events->size());
        // A prefix: seqs 1..n, never shrinking, covering every acknowledgement
        // made before the read started.
        bool ok = n >= acked && n >= last_len;
        for (int64_t k = 0; ok && k < n; ++k) ok = (*events)[k].seq == k + 1;
        if (!ok) ++reader_errors;
        last_len = n;
        ++reads;
      }
    });
  }
  for (auto& th : threads) th.join();
  writers_done = true;
  for (auto& th : readers) th.join();
  ASSERT_EQ(failures.load(), 0);
  EXPECT_EQ(reader_errors.load(), 0);
  EXPECT_GT(reads.load(), 0);

  for (int t = 0; t < kThreads; ++t) {
    // Own job: exactly 1..500 in call order, payloads in order.
    ASSERT_EQ(own_seqs[t].size(), static_cast<size_t>(kPerThread));
    for (int i = 0; i < kPerThread; ++i) EXPECT_EQ(own_seqs[t][i], i + 1);
    auto events = store_->ReadEvents(own_jobs[t], 0, 100000);
    ASSERT_TRUE(events.ok());
    ASSERT_EQ(events->size(), static_cast<size_t>(kPerThread));
    for (int i = 0; i < kPerThread; ++i) {
      EXPECT_EQ((*events)[i].seq, i + 1);
      EXPECT_EQ((*events)[i].payload_json,
                "{\"t\":" + std::to_string(t) + ",\"i\":" + std::to_string(i) + "}");
    }
  }

  // Shared job: 4000 events, seqs 1..4000, each thread's seqs increasing and
  // the payload at each returned seq is the one that thread wrote.
  auto events = store_->ReadEvents(shared, 0, 100000);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), static_cast<size_t>(kThreads * kPerThread));
  for (size_t k = 0; k < events->size(); ++k) EXPECT_EQ((*events)[k].seq, int64_t(k) + 1);
  std::set<int64_t> all;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(shared_seqs[t].size(), static_cast<size_t>(kPerThread));
    for (int i = 0; i < kPerThread; ++i) {
      int64_t seq = shared_seqs[t][i];
      if (i > 0) {
        EXPECT_GT(seq, shared_seqs[t][i - 1]);
      }
      EXPECT_TRUE(all.insert(seq).second) << "duplicate seq " << seq;
      EXPECT_EQ((*events)[seq - 1].payload_json,
                "shared t" + std::to_string(t) + " i" + std::to_string(i));
    }
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(*store_->LastEventSeq(shared), kThreads * kPerThread);
}

// Callers for unknown jobs that are batched together with good callers fail
// alone.
TEST_F(StoreTest, BadEventInConcurrentBatchFailsAlone) {
  std::string job = NewJob();
  std::atomic<int> good_ok{0};
  std::atomic<int> bad_not_found{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        if (t % 2 == 0) {
          if (store_->AppendEvent(MakeEvent(job, "ok")).ok()) ++good_ok;
        } else {
          if (absl::IsNotFound(store_->AppendEvent(MakeEvent(NewId("job"), "x")).status())) {
            ++bad_not_found;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good_ok.load(), 400);
  EXPECT_EQ(bad_not_found.load(), 400);
  auto events = store_->ReadEvents(job, 0);
  ASSERT_EQ(events->size(), 400u);
  for (size_t k = 0; k < events->size(); ++k) EXPECT_EQ((*events)[k].seq, int64_t(k) + 1);
  EXPECT_EQ(CountRows("events"), 400);
}

// ------------------------------------------------------------------- steps

// A step's rows and its event commit as one write; the rows read back like
// the ones the single-row calls write, candidates stay deduplicated, and the
// job's best speedup is maintained.
TEST_F(StoreTest, AppendEventWithWritesTheStepAndItsEvent) {
  const std::string job = NewJob();
  TurnRecord turn{NewId("turn"), job, 0, 1000, 10, "initial"};
  CandidateRecord cand = MakeCandidate("__global__ void step() {}");
  LlmCallRecord call = MakeLlmCall(job, turn.id);
  EvaluationRecord eval = MakeEval(job, cand.sha256, 1.5);
  eval.turn_id = turn.id;
  auto seq = store_->AppendEventWith(
      {.turn = &turn, .llm_call = &call, .candidate = &cand, .evaluation = &eval},
      MakeEvent(job, "{\"step\":1}", "step"));
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(*seq, 1);
  ASSERT_EQ(store_->ListTurns(job)->size(), 1u);
  EXPECT_EQ(store_->ListTurns(job)->at(0).note, "initial");
  ASSERT_EQ(store_->ListLlmCalls(job)->size(), 1u);
  EXPECT_EQ(store_->ListLlmCalls(job)->at(0).turn_id, turn.id);
  ASSERT_EQ(store_->ListEvaluations(job)->size(), 1u);
  EXPECT_EQ(store_->ListEvaluations(job)->at(0).turn_id, turn.id);
  EXPECT_TRUE(store_->GetCandidate(cand.sha256).ok());
  auto j = store_->GetJob(job);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->best_speedup, 1.5);
  EXPECT_EQ(j->best_evaluation_id, eval.id);

  // Some rows only, the same candidate again (deduplicated, not an error).
  EvaluationRecord eval2 = MakeEval(job, cand.sha256, 2.0);
  seq = store_->AppendEventWith({.candidate = &cand, .evaluation = &eval2}, MakeEvent(job, "2"));
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(*seq, 2);
  EXPECT_EQ(CountRows("candidates"), 1);
  EXPECT_EQ(store_->GetJob(job)->best_evaluation_id, eval2.id);
  // No rows: the same as AppendEvent.
  EXPECT_EQ(*store_->AppendEventWith({}, MakeEvent(job, "3")), 3);
  EXPECT_EQ(CountRows("events"), 3);
  auto stats = store_->GetJobStats(job);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->turns, 1);
  EXPECT_EQ(stats->llm_calls, 1);
  EXPECT_EQ(stats->evaluations, 2);
}

// A step that fails anywhere -- bad field, row of another job, unknown
// reference, duplicate id, unknown job -- writes none of its rows, no event,
// and does not consume a seq.
TEST_F(StoreTest, FailedStepWritesNothingAndKeepsTheSequence) {
  const std::string job = NewJob();
  const std::string other = NewJob();
  TurnRecord turn{NewId("turn"), job, 0, 1000, 10, ""};
  ASSERT_EQ(*store_->AppendEventWith({.turn = &turn}, MakeEvent(job, "1")), 1);

  struct Case {
    std::string name;
    absl::StatusCode code;
    std::function<absl::Status()> step;
  };
  CandidateRecord missing = MakeCandidate("never stored");
  std::vector<Case> cases = {
      {"row field invalid", absl::StatusCode::kInvalidArgument,
       [&] {
         LlmCallRecord c = MakeLlmCall(job, "");
         c.latency_ms = kNaN;
         return store_->AppendEventWith({.llm_call = &c}, MakeEvent(job, "x")).status();
       }},
      {"row of another job", absl::StatusCode::kInvalidArgument,
       [&] {
         TurnRecord t{NewId("turn"), other, 0, 1000, 10, ""};
         return store_->AppendEventWith({.turn = &t}, MakeEvent(job, "x")).status();
       }},
      {"evaluation of a candidate never stored, after a good turn", absl::StatusCode::kNotFound,
       [&] {
         TurnRecord t{NewId("turn"), job, 1, 1000, 10, ""};
         EvaluationRecord e = MakeEval(job, missing.sha256, 1.0);
         e.turn_id = t.id;
         return store_->AppendEventWith({.turn = &t, .evaluation = &e}, MakeEvent(job, "x"))
             .status();
       }},
      {"duplicate turn index, after a good candidate and before a good call",
       absl::StatusCode::kAlreadyExists,
       [&] {
         TurnRecord t{NewId("turn"), job, 0, 1000, 10, ""};
         CandidateRecord c = MakeCandidate("new candidate");
         LlmCallRecord call = MakeLlmCall(job, t.id);
         return store_
             ->AppendEventWith({.turn = &t, .llm_call = &call, .candidate = &c},
                               MakeEvent(job, "x"))
             .status();
       }},
      {"llm call pointing to a turn of another job", absl::StatusCode::kInvalidArgument,
       [&] {
         TurnRecord t{NewId("turn"), other, 0, 1000, 10, ""};
         EXPECT_TRUE(store_->AddTurn(t).ok());
         LlmCallRecord c = MakeLlmCall(job, t.id);
         return store_->AppendEventWith({.llm_call = &c}, MakeEvent(job, "x")).status();
       }},
      {"unknown job", absl::StatusCode::kNotFound,
       [&] {
         const std::string ghost = NewId("job");
         TurnRecord t{NewId("turn"), ghost, 0, 1000, 10, ""};
         return store_->AppendEventWith({.turn = &t}, MakeEvent(ghost, "x")).status();
       }},
  };
  for (const Case& c : cases) {
    absl::Status s = c.step();
    EXPECT_EQ(s.code(), c.code) << c.name << ": " << s;
  }
  EXPECT_EQ(CountRows("turns"), 2);  // the first step's and the other job's
  EXPECT_EQ(CountRows("llm_calls"), 0);
  EXPECT_EQ(CountRows("evaluations"), 0);
  EXPECT_EQ(CountRows("candidates"), 0);
  EXPECT_EQ(CountRows("events"), 1);
  EXPECT_EQ(*store_->AppendEventWith({}, MakeEvent(job, "2")), 2);
}

// When the event of a step cannot take its seq (a row written behind the
// store's back, as in FailedBatchResetsSequenceCache), the step's rows roll
// back with it and the next step resumes the sequence from the file.
TEST_F(StoreTest, StepWhoseEventFailsRollsBackItsRows) {
  const std::string job = NewJob();
  ASSERT_EQ(*store_->AppendEvent(MakeEvent(job, "a")), 1);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    std::string sql =
        "INSERT INTO events (job_id, seq, wall_us, elapsed_ms, type, payload_json) "
        "VALUES ('" +
        job + "', 2, 1, 1, 'intruder', 'b')";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  TurnRecord turn{NewId("turn"), job, 0, 1000, 10, ""};
  absl::Status s = store_->AppendEventWith({.turn = &turn}, MakeEvent(job, "c")).status();
  EXPECT_TRUE(absl::IsAlreadyExists(s)) << s;
  EXPECT_EQ(CountRows("turns"), 0);
  auto seq = store_->AppendEventWith({.turn = &turn}, MakeEvent(job, "d"));
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(*seq, 3);
  EXPECT_EQ(CountRows("turns"), 1);
}

// Many writers of every kind at once, so batches mix steps, single rows, job
// creations and state changes, some of which fail: every failed write leaves
// no trace, every successful one is complete, and seqs stay contiguous.
TEST_F(StoreTest, ConcurrentMixedWritesCommitTogetherAndFailAlone) {
  constexpr int kStepThreads = 6;
  constexpr int kSteps = 120;
  std::vector<std::string> jobs;
  for (int t = 0; t < kStepThreads; ++t) jobs.push_back(NewJob());
  const std::string shared = NewJob();
  std::vector<int> ok_steps(kStepThreads, 0);
  std::atomic<int> unexpected{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kStepThreads; ++t) {
    threads.emplace_back([&, t] {
      std::string last_eval_id;
      for (int i = 0; i < kSteps; ++i) {
        // Every 10th step reuses the previous step's evaluation id, so it
        // fails with ALREADY_EXISTS at its last row, after its turn,
        // candidate and call were inserted: they must all roll back.
        const bool dup = i % 10 == 9;
        TurnRecord turn{NewId("turn"), jobs[t], i, 1000, i, ""};
        CandidateRecord cand =
            MakeCandidate("// thread " + std::to_string(t) + " step " + std::to_string(i));
        LlmCallRecord call = MakeLlmCall(jobs[t], turn.id);
        EvaluationRecord eval = MakeEval(jobs[t], cand.sha256, 1.0 + i);
        eval.turn_id = turn.id;
        if (dup) eval.id = last_eval_id;
        auto seq = store_->AppendEventWith(
            {.turn = &turn, .llm_call = &call, .candidate = &cand, .evaluation = &eval},
            MakeEvent(jobs[t], turn.id, "step"));
        if (dup) {
          if (!absl::IsAlreadyExists(seq.status())) ++unexpected;
          continue;
        }
        if (!seq.ok() || *seq != ok_steps[t] + 1) ++unexpected;
        ++ok_steps[t];
        last_eval_id = eval.id;
      }
    });
  }
  std::atomic<int> shared_ok{0};
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kSteps; ++i) {
        if (store_->AppendEvent(MakeEvent(shared, "s")).ok()) ++shared_ok;
      }
    });
  }
  std::vector<std::string> lifecycle_jobs(40);
  threads.emplace_back([&] {
    for (std::string& id : lifecycle_jobs) {
      JobRecord j = MakeJob();
      id = j.id;
      if (!store_->CreateJob(j).ok()) ++unexpected;
      if (!absl::IsAlreadyExists(store_->CreateJob(j))) ++unexpected;
      if (!store_->UpdateJobState(id, JobState::kRunning).ok()) ++unexpected;
      if (!store_->UpdateJobState(id, JobState::kSucceeded).ok()) ++unexpected;
      if (!absl::IsFailedPrecondition(store_->UpdateJobState(id, JobState::kFailed))) {
        ++unexpected;
      }
    }
  });
  for (auto& th : threads) th.join();
  EXPECT_EQ(unexpected.load(), 0);

  for (int t = 0; t < kStepThreads; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    EXPECT_EQ(ok_steps[t], kSteps - kSteps / 10);
    auto events = store_->ReadEvents(jobs[t], 0);
    auto turns = store_->ListTurns(jobs[t]);
    ASSERT_TRUE(events.ok() && turns.ok());
    ASSERT_EQ(events->size(), static_cast<size_t>(ok_steps[t]));
    ASSERT_EQ(turns->size(), events->size());
    for (size_t k = 0; k < events->size(); ++k) {
      EXPECT_EQ((*events)[k].seq, static_cast<int64_t>(k) + 1);
      EXPECT_EQ((*events)[k].payload_json, (*turns)[k].id);  // the step's own turn
    }
    EXPECT_EQ(store_->ListLlmCalls(jobs[t])->size(), events->size());
    EXPECT_EQ(store_->ListEvaluations(jobs[t])->size(), events->size());
  }
  EXPECT_EQ(CountRows("candidates"), kStepThreads * (kSteps - kSteps / 10));
  EXPECT_EQ(shared_ok.load(), 2 * kSteps);
  EXPECT_EQ(*store_->LastEventSeq(shared), 2 * kSteps);
  for (const std::string& id : lifecycle_jobs) {
    EXPECT_EQ(store_->GetJob(id)->state, JobState::kSucceeded);
  }
}

TEST(StoreOpenTest, RejectsBadOptionsAndPaths) {
  TrajectoryStore::Options opts;
  opts.read_connections = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(TrajectoryStore::Open("/tmp/x.db", opts).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(TrajectoryStore::Open("").status()));
  auto s = TrajectoryStore::Open("/nonexistent-dir-pkforge/x.db").status();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("/nonexistent-dir-pkforge/x.db"));
}

}  // namespace
}  // namespace pkforge::storage

namespace pkforge::storage {
namespace {

// Issue #15 (item 6): a terminal event and the terminal row are one write,
// and a full database (SQLite's max_page_count: the same SQLITE_FULL as a full
// disk) fails that write with nothing written, after which the same write
// succeeds once space is given back.
class StoreFullDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    path_ = dir_ + "/traj.db";
    auto store = TrajectoryStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(store).value();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string dir_, path_;
  std::unique_ptr<TrajectoryStore> store_;
};

TEST_F(StoreFullDiskTest, TerminalEventAndRowCommitTogetherOrNotAtAll) {
  JobRecord job = MakeJob();
  ASSERT_TRUE(store_->CreateJob(job).ok());
  ASSERT_TRUE(store_->UpdateJobState(job.id, JobState::kRunning).ok());
  // Fill the file: the limit becomes the current size, then small events
  // take the free space of the last pages until one does not fit.
  auto limit = store_->SetMaxPageCount(1);
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_GT(*limit, 1);
  absl::Status full;
  for (int i = 0; i < 100000 && full.ok(); ++i) {
    full = store_->AppendEvent(MakeEvent(job.id, R"({"i":1})", "log")).status();
  }
  ASSERT_FALSE(full.ok());
  EXPECT_THAT(std::string(full.message()), HasSubstr("full"));
  const int64_t last = store_->LastEventSeq(job.id).value();

  JobStateChange end{JobState::kFailed, "the agent failed", 0};
  EventRecord terminal =
      MakeEvent(job.id, R"({"state":"JOB_STATE_FAILED","reason":"failed: the agent failed"})",
                "state_changed");
  absl::StatusOr<int64_t> seq = store_->AppendEventWith({.job_state = &end}, terminal);
  ASSERT_FALSE(seq.ok());
  EXPECT_THAT(std::string(seq.status().message()), HasSubstr("full"));
  // Nothing of it was written: the job is still running, no event added.
  EXPECT_EQ(store_->GetJob(job.id)->state, JobState::kRunning);
  EXPECT_EQ(store_->LastEventSeq(job.id).value(), last);

  // Space comes back: the same write now succeeds, event and row together.
  ASSERT_TRUE(store_->SetMaxPageCount(1 << 30).ok());
  seq = store_->AppendEventWith({.job_state = &end}, terminal);
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(*seq, last + 1);
  auto row = store_->GetJob(job.id);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->state, JobState::kFailed);
  EXPECT_EQ(row->error, "the agent failed");
  EXPECT_GT(row->finished_wall_us, 0);
  // A job already terminal refuses a second end, and its event is not added.
  EXPECT_FALSE(store_->AppendEventWith({.job_state = &end}, terminal).ok());
  EXPECT_EQ(store_->LastEventSeq(job.id).value(), last + 1);
}

}  // namespace
}  // namespace pkforge::storage
