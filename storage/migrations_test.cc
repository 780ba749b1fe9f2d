#include "storage/migrations.h"

#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/store.h"

namespace pkforge::storage {
namespace {

using ::testing::HasSubstr;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class MigrationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "migrations_test.XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/traj.db";
  }
  void TearDown() override {
    if (db_ != nullptr) sqlite3_close(db_);
    std::filesystem::remove_all(dir_);
  }

  // A raw connection, as an older pkforge binary (or a researcher) would have.
  void OpenRaw() { ASSERT_EQ(sqlite3_open(path_.c_str(), &db_), SQLITE_OK); }
  void CloseRaw() {
    ASSERT_EQ(sqlite3_close(db_), SQLITE_OK);
    db_ = nullptr;
  }
  void Exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    ASSERT_EQ(rc, SQLITE_OK) << (err ? err : "") << "\n" << sql;
  }
  int64_t QueryInt(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
    EXPECT_EQ(sqlite3_step(st), SQLITE_ROW) << sql;
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
  }
  std::string QueryText(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
    EXPECT_EQ(sqlite3_step(st), SQLITE_ROW) << sql;
    std::string v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
  }
  std::set<std::string> Columns(const std::string& table) {
    std::set<std::string> out;
    sqlite3_stmt* st = nullptr;
    std::string sql = "PRAGMA table_info(" + table + ")";
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
      out.insert(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
    }
    sqlite3_finalize(st);
    return out;
  }

  // A database at schema `version`, built by running only the first
  // `version` migrations.
  void BuildAtVersion(int version) {
    OpenRaw();
    ASSERT_TRUE(internal::MigrateTo(db_, version).ok());
    ASSERT_EQ(*internal::ReadUserVersion(db_), version);
  }

  std::string dir_;
  std::string path_;
  sqlite3* db_ = nullptr;
};

TEST(MigrationListTest, VersionsAreDenseAndCurrentIsLast) {
  const auto& ms = internal::Migrations();
  ASSERT_GE(ms.size(), 2u);
  for (size_t i = 0; i < ms.size(); ++i) {
    EXPECT_EQ(ms[i].version, static_cast<int>(i) + 1);
    EXPECT_NE(std::string(ms[i].name), "");
  }
  EXPECT_EQ(CurrentSchemaVersion(), ms.back().version);
}

TEST_F(MigrationsTest, UpgradesV1DatabaseAndPreservesData) {
  BuildAtVersion(1);
  EXPECT_EQ(Columns("jobs").count("best_speedup"), 0u);
  EXPECT_EQ(Columns("llm_calls").count("attempts"), 0u);

  const std::string job = NewId("job");
  const std::string idle_job = NewId("job");
  const std::string turn = NewId("turn");
  const std::string llm = NewId("llm");
  const std::string sha1 = Sha256Hex("k1");
  const std::string sha2 = Sha256Hex("k2");
  const std::string e_slow = NewId("eval");
  const std::string e_best = NewId("eval");
  const std::string e_wrong = NewId("eval");
  const std::string e_tie = NewId("eval");
  // Exactly the rows a v1 binary could have written (no attempts, no best_*).
  for (const std::string& id : {job, idle_job}) {
    Exec(
        "INSERT INTO jobs (id, spec_json, problem, backend, world_size, dtype, agent_kind, "
        "model, strategy, label, state, created_wall_us, budget_wall_s) VALUES ('" +
        id +
        "', '{}', 'allreduce', 'cuda', 2, 'bf16', 'llm', 'm', 'sequential', 'old', "
        "'succeeded', 1000, 60)");
  }
  Exec("INSERT INTO turns (id, job_id, turn_index, started_wall_us, elapsed_ms, note) VALUES ('" +
       turn + "', '" + job + "', 0, 1100, 100, 'first')");
  Exec(
      "INSERT INTO llm_calls (id, job_id, turn_id, provider, model, prompt, reply, "
      "prompt_tokens, completion_tokens, latency_ms, cost_usd, wall_us, elapsed_ms) VALUES ('" +
      llm + "', '" + job + "', '" + turn +
      "', 'openai', 'm', 'p', 'r', 10, 20, 1.5, 0.01, "
      "1200, 200)");
  Exec("INSERT INTO candidates VALUES ('" + sha1 + "', 'k1', 'cuda', 1300), ('" + sha2 +
       "', 'k2', 'cuda', 1400)");
  auto eval = [&](const std::string& id, const std::string& sha, const char* status, int correct,
                  const char* speedup, int elapsed) {
    Exec(
        "INSERT INTO evaluations (id, job_id, candidate_sha256, status, correct, speedup, "
        "wall_us, elapsed_ms) VALUES ('" +
        id + "', '" + job + "', '" + sha + "', '" + status + "', " + std::to_string(correct) +
        ", " + speedup + ", 2000, " + std::to_string(elapsed) + ")");
  };
  eval(e_slow, sha1, "OK", 1, "1.5", 1000);
  eval(e_best, sha2, "OK", 1, "2.0", 2000);
  eval(e_wrong, sha2, "WRONG_OUTPUT", 0, "5.0", 2500);
  eval(e_tie, sha1, "OK", 1, "2.0", 3000);
  for (int seq = 1; seq <= 3; ++seq) {
    Exec("INSERT INTO events VALUES ('" + job + "', " + std::to_string(seq) +
         ", 5000, 10, 'old_event', '{\"seq\":" + std::to_string(seq) + "}')");
  }
  CloseRaw();

  auto opened = TrajectoryStore::Open(path_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  TrajectoryStore& store = **opened;
  EXPECT_EQ(*store.SchemaVersion(), CurrentSchemaVersion());

  // v2 backfilled the best-so-far from existing evaluations (ties keep the
  // earlier evaluation; wrong ones never count).
  auto j = store.GetJob(job);
  ASSERT_TRUE(j.ok()) << j.status();
  ASSERT_TRUE(j->best_speedup.has_value());
  EXPECT_DOUBLE_EQ(*j->best_speedup, 2.0);
  EXPECT_EQ(j->best_evaluation_id, e_best);
  EXPECT_EQ(j->label, "old");
  EXPECT_EQ(j->state, JobState::kSucceeded);
  EXPECT_FALSE(store.GetJob(idle_job)->best_speedup.has_value());
  // v4: jobs from before client_request_id have none.
  EXPECT_EQ(j->client_request_id, "");

  // v3: old LLM calls count as one attempt.
  auto calls = store.ListLlmCalls(job);
  ASSERT_TRUE(calls.ok());
  ASSERT_EQ(calls->size(), 1u);
  EXPECT_EQ((*calls)[0].attempts, 1);
  EXPECT_EQ((*calls)[0].turn_id, turn);
  EXPECT_EQ(store.ListTurns(job)->size(), 1u);
  EXPECT_EQ(store.ListEvaluations(job)->size(), 4u);
  auto events = store.ReadEvents(job, 0);
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[2].payload_json, "{\"seq\":3}");

  // New features work on the upgraded file.
  EXPECT_EQ(*store.AppendEvent({job, 0, 6000, 20, "new_event", "{}"}), 4);
  EvaluationRecord better;
  better.id = NewId("eval");
  better.job_id = job;
  better.candidate_sha256 = sha1;
  better.status = "OK";
  better.correct = true;
  better.speedup = 3.0;
  better.wall_us = 7000;
  better.elapsed_ms = 4000;
  ASSERT_TRUE(store.AddEvaluation(better).ok());
  EXPECT_EQ(store.GetJob(job)->best_evaluation_id, better.id);
  LlmCallRecord retried = (*calls)[0];
  retried.id = NewId("llm");
  retried.attempts = 4;
  ASSERT_TRUE(store.AddLlmCall(retried).ok());
  EXPECT_EQ(store.ListLlmCalls(job)->at(1).attempts, 4);
  opened->reset();

  OpenRaw();
  for (const char* index :
       {"jobs_by_state", "jobs_by_problem", "jobs_by_model", "jobs_by_label", "llm_calls_by_job",
        "evaluations_by_job", "evaluations_by_candidate", "jobs_by_client_request_id"}) {
    EXPECT_EQ(QueryInt(std::string("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND "
                                   "name = '") +
                       index + "'"),
              1)
        << index;
  }
  EXPECT_EQ(QueryText("PRAGMA integrity_check"), "ok");
}

// v3 -> v4: an existing file's jobs are kept as they were, with '' as their
// client_request_id (so none of them collide), and the upgraded file enforces
// the key for new jobs.
TEST_F(MigrationsTest, UpgradesV3DatabaseKeepingOldJobsWithEmptyClientRequestIds) {
  BuildAtVersion(3);
  EXPECT_EQ(Columns("jobs").count("client_request_id"), 0u);
  std::vector<std::string> old_jobs;
  for (const char* state : {"succeeded", "queued", "running"}) {
    old_jobs.push_back(NewId("job"));
    Exec(
        "INSERT INTO jobs (id, spec_json, problem, backend, world_size, dtype, agent_kind, "
        "model, strategy, label, state, created_wall_us, budget_wall_s) VALUES ('" +
        old_jobs.back() +
        "', '{\"problem\":\"allreduce\"}', 'allreduce', 'cuda', 2, 'bf16', "
        "'search', '', 'sequential', 'v3', '" +
        state + "', 1000, 60)");
    Exec("INSERT INTO events VALUES ('" + old_jobs.back() +
         "', 1, 1000, 0, 'state_changed', '{}')");
  }
  CloseRaw();

  auto opened = TrajectoryStore::Open(path_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  TrajectoryStore& store = **opened;
  EXPECT_EQ(*store.SchemaVersion(), CurrentSchemaVersion());
  for (const std::string& id : old_jobs) {
    auto j = store.GetJob(id);
    ASSERT_TRUE(j.ok()) << j.status();
    EXPECT_EQ(j->client_request_id, "");
    EXPECT_EQ(j->label, "v3");
    EXPECT_EQ(j->spec_json, "{\"problem\":\"allreduce\"}");
    EXPECT_EQ(store.ReadEvents(id, 0)->size(), 1u);
  }
  auto unfinished = store.ListUnfinishedJobs();
  ASSERT_TRUE(unfinished.ok());
  EXPECT_EQ(unfinished->size(), 2u);

  // New jobs: '' still never collides with the old ones; a non-empty key is
  // unique and found.
  JobRecord job;
  job.id = NewId("job");
  job.spec_json = "{}";
  job.problem = "p";
  job.backend = "host";
  job.dtype = "f32";
  job.agent_kind = "search";
  ASSERT_TRUE(store.CreateJob(job).ok());
  job.id = NewId("job");
  job.client_request_id = "abc";
  ASSERT_TRUE(store.CreateJob(job).ok());
  const std::string keyed = job.id;
  job.id = NewId("job");
  absl::Status dup = store.CreateJob(job);
  EXPECT_TRUE(absl::IsAlreadyExists(dup)) << dup;
  EXPECT_THAT(std::string(dup.message()), HasSubstr("client_request_id"));
  auto found = store.FindJobByClientRequestId("abc");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->id, keyed);
  opened->reset();

  OpenRaw();
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM jobs"), 5);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM jobs WHERE client_request_id = ''"), 4);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND "
                     "name = 'jobs_by_client_request_id' AND sql LIKE '%UNIQUE%'"),
            1);
  EXPECT_EQ(QueryText("PRAGMA integrity_check"), "ok");
}

TEST_F(MigrationsTest, UpgradesFromEveryOlderVersion) {
  for (int v = 0; v <= CurrentSchemaVersion(); ++v) {
    SCOPED_TRACE(v);
    std::filesystem::remove(path_);
    BuildAtVersion(v);
    CloseRaw();
    auto store = TrajectoryStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ(*(*store)->SchemaVersion(), CurrentSchemaVersion());
    JobRecord job;
    job.id = NewId("job");
    job.spec_json = "{}";
    job.problem = "p";
    job.backend = "host";
    job.dtype = "f32";
    job.agent_kind = "search";
    EXPECT_TRUE((*store)->CreateJob(job).ok());
    EXPECT_EQ(*(*store)->AppendEvent({job.id, 0, 1, 0, "t", ""}), 1);
  }
}

// Each step is one transaction: when a late statement of step 2 fails, its
// earlier ALTERs are rolled back too and the file stays a valid v1.
TEST_F(MigrationsTest, FailedStepRollsBackCompletely) {
  BuildAtVersion(1);
  Exec("CREATE INDEX jobs_by_label ON jobs (problem)");  // collides with v2's index
  CloseRaw();

  auto store = TrajectoryStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("migration 2"));

  OpenRaw();
  EXPECT_EQ(*internal::ReadUserVersion(db_), 1);
  EXPECT_EQ(Columns("jobs").count("best_speedup"), 0u);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM sqlite_master WHERE name = 'jobs_by_state'"), 0);
  Exec("DROP INDEX jobs_by_label");
  CloseRaw();

  store = TrajectoryStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(*(*store)->SchemaVersion(), CurrentSchemaVersion());
}

TEST_F(MigrationsTest, MigrateToRefusesDowngrade) {
  BuildAtVersion(2);
  absl::Status s = internal::MigrateTo(db_, 1);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_EQ(*internal::ReadUserVersion(db_), 2);
  EXPECT_TRUE(absl::IsInvalidArgument(internal::MigrateTo(db_, CurrentSchemaVersion() + 1)));
}

TEST_F(MigrationsTest, RefusesNewerDatabaseAndLeavesItUntouched) {
  const int newer = CurrentSchemaVersion() + 1;
  OpenRaw();
  Exec("CREATE TABLE future (x INTEGER); INSERT INTO future VALUES (1);");
  Exec("PRAGMA user_version = " + std::to_string(newer));
  CloseRaw();
  const std::string before = ReadBytes(path_);
  ASSERT_FALSE(before.empty());

  auto store = TrajectoryStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(store.status())) << store.status();
  const std::string msg(store.status().message());
  EXPECT_THAT(msg, HasSubstr("version " + std::to_string(newer)));
  EXPECT_THAT(msg, HasSubstr("version " + std::to_string(CurrentSchemaVersion())));

  EXPECT_EQ(ReadBytes(path_), before);
  // Not even switched to WAL: no side files appeared.
  EXPECT_FALSE(std::filesystem::exists(path_ + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path_ + "-journal"));
}

// A newer binary that died with commits still in its WAL: the version must be
// read through the WAL, and closing our connection must not checkpoint that
// WAL into the main file.
TEST_F(MigrationsTest, RefusesNewerWalDatabaseWithoutCheckpointingIt) {
  const int newer = CurrentSchemaVersion() + 1;
  OpenRaw();
  Exec("PRAGMA journal_mode = WAL");
  Exec("CREATE TABLE future (x INTEGER)");
  // Force the table into the main file, then leave later commits in the WAL.
  Exec("PRAGMA wal_checkpoint(TRUNCATE)");
  ASSERT_EQ(sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr), SQLITE_OK);
  Exec("INSERT INTO future VALUES (42)");
  Exec("PRAGMA user_version = " + std::to_string(newer));
  CloseRaw();
  ASSERT_TRUE(std::filesystem::exists(path_ + "-wal"));
  const std::string main_before = ReadBytes(path_);
  const std::string wal_before = ReadBytes(path_ + "-wal");
  ASSERT_FALSE(wal_before.empty());

  auto store = TrajectoryStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(store.status())) << store.status();
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("version " + std::to_string(newer)));
  EXPECT_EQ(ReadBytes(path_), main_before);
  EXPECT_EQ(ReadBytes(path_ + "-wal"), wal_before);

  // The newer binary's data is still there for it.
  OpenRaw();
  EXPECT_EQ(QueryInt("SELECT x FROM future"), 42);
  EXPECT_EQ(*internal::ReadUserVersion(db_), newer);
}

// schema.md is the researchers' reference: every column of every table must
// be documented there (as `column` inside the table's section).
TEST_F(MigrationsTest, SchemaDocDescribesEveryColumn) {
  const std::filesystem::path doc = std::filesystem::path(__FILE__).parent_path() / "schema.md";
  if (!std::filesystem::exists(doc)) GTEST_SKIP() << doc << " not found (out-of-tree build?)";
  const std::string text = ReadBytes(doc.string());
  EXPECT_THAT(text, HasSubstr("Current schema version: **" +
                              std::to_string(CurrentSchemaVersion()) + "**"));
  BuildAtVersion(CurrentSchemaVersion());

  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db_,
                               "SELECT name FROM sqlite_master WHERE type = 'table' AND "
                               "name NOT LIKE 'sqlite_%' ORDER BY name",
                               -1, &st, nullptr),
            SQLITE_OK);
  std::vector<std::string> tables;
  while (sqlite3_step(st) == SQLITE_ROW) {
    tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  }
  sqlite3_finalize(st);
  ASSERT_EQ(tables.size(), 6u);
  for (const std::string& table : tables) {
    const std::string heading = "### `" + table + "`";
    size_t begin = text.find(heading);
    ASSERT_NE(begin, std::string::npos) << "no section " << heading;
    size_t end = text.find("\n### ", begin + heading.size());
    const std::string section = text.substr(begin, end - begin);
    for (const std::string& column : Columns(table)) {
      EXPECT_THAT(section, HasSubstr("| `" + column + "`")) << table << "." << column;
    }
  }
}

}  // namespace
}  // namespace pkforge::storage
