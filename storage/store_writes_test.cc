// The trajectory store's writes together: concurrent writers and readers,
// steps (rows and their event as one write), and a full database (the
// terminal event and row commit together or not at all). Helpers in
// store_test_util.h.

#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <set>
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
