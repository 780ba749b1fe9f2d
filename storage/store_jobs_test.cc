// The trajectory store: opening (schema version, WAL, bad options) and the
// jobs table (round trip, the client_request_id key, states, listing).
// Helpers in store_test_util.h.

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/ids.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/store.h"
#include "storage/store_test_util.h"

namespace pkforge::storage {
namespace {

using ::testing::HasSubstr;

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
