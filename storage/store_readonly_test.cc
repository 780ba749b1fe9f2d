// TrajectoryStore::Options::access = kReadOnly / kImmutable: offline analysis
// never creates, migrates or writes the file (store.h, "Read-only opening").
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "common/ids.h"
#include "common/sha256.h"
#include "gtest/gtest.h"
#include "storage/migrations.h"
#include "storage/store.h"

namespace pkforge::storage {
namespace {

namespace fs = std::filesystem;
using Access = TrajectoryStore::Options::Access;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::set<std::string> Listing(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

void Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  ASSERT_EQ(rc, SQLITE_OK) << (err ? err : "") << "\n" << sql;
}

int UserVersion(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr), SQLITE_OK);
  EXPECT_EQ(sqlite3_step(st), SQLITE_ROW);
  int v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

TrajectoryStore::Options WithAccess(Access a) {
  TrajectoryStore::Options o;
  o.access = a;
  return o;
}

class StoreReadOnlyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "store_readonly_test.XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = (dir_ / "traj.db").string();
  }
  void TearDown() override {
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(dir_, ec)) {
      fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    }
    fs::remove_all(dir_, ec);
  }

  // A schema-v1 file as a pkforge of that version wrote it (WAL mode): one
  // job with a correct evaluation (speedup 2) and an LLM call.
  void WriteVersion1File() {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    Exec(db, "PRAGMA journal_mode = WAL");
    Exec(db, internal::Migrations()[0].sql);
    Exec(db, "PRAGMA user_version = 1");
    job_id_ = NewId("job");
    const std::string src = "int pkf_run(){return 1;}";
    Exec(db, "INSERT INTO jobs (id, spec_json, problem, backend, world_size, dtype, agent_kind, "
             "state, created_wall_us) VALUES ('" + job_id_ +
                 "', '{}', 'allreduce', 'host', 1, 'f32', 'llm', 'succeeded', 1000)");
    Exec(db, "INSERT INTO candidates VALUES ('" + Sha256Hex(src) + "', '" + src +
                 "', 'host', 1000)");
    Exec(db, "INSERT INTO evaluations (id, job_id, candidate_sha256, status, correct, speedup, "
             "wall_us, elapsed_ms) VALUES ('" + NewId("eval") + "', '" + job_id_ + "', '" +
                 Sha256Hex(src) + "', 'OK', 1, 2.0, 2000, 1)");
    Exec(db, "INSERT INTO llm_calls (id, job_id, provider, model, prompt, reply, prompt_tokens, "
             "completion_tokens, latency_ms, cost_usd, wall_us, elapsed_ms) VALUES ('" +
                 NewId("llm") + "', '" + job_id_ + "', 'openai', 'm', '[]', 'r', 1, 2, 3, 0, 1500, 0)");
    ASSERT_EQ(sqlite3_close(db), SQLITE_OK);  // checkpoints and removes the -wal
  }

  // A current-version file written through the store.
  void WriteCurrentFile() {
    auto store = TrajectoryStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    JobRecord job;
    job.id = job_id_ = NewId("job");
    job.spec_json = "{}";
    job.problem = "allreduce";
    job.backend = "host";
    job.dtype = "f32";
    job.agent_kind = "search";
    job.created_wall_us = 1000;
    ASSERT_TRUE((*store)->CreateJob(job).ok());
  }

  fs::path dir_;
  std::string path_;
  std::string job_id_;
};

// Without the read-only mode this file was upgraded in place to the current
// version by any `--db` analysis (and an older pkforge could no longer read it).
TEST_F(StoreReadOnlyTest, OlderSchemaIsReadThroughAnUpgradedCopyAndTheFileIsUntouched) {
  WriteVersion1File();
  const std::string before = ReadBytes(path_);
  const std::set<std::string> listing = Listing(dir_);
  {
    auto store = TrajectoryStore::Open(path_, WithAccess(Access::kReadOnly));
    ASSERT_TRUE(store.ok()) << store.status();
    auto job = (*store)->GetJob(job_id_);
    ASSERT_TRUE(job.ok()) << job.status();
    // Columns of later versions read as their migrations fill them in.
    ASSERT_TRUE(job->best_speedup.has_value());
    EXPECT_DOUBLE_EQ(*job->best_speedup, 2.0);
    EXPECT_EQ(job->client_request_id, "");
    auto calls = (*store)->ListLlmCalls(job_id_);
    ASSERT_TRUE(calls.ok()) << calls.status();
    ASSERT_EQ(calls->size(), 1u);
    EXPECT_EQ((*calls)[0].attempts, 1);
    auto evals = (*store)->ListEvaluations(job_id_);
    ASSERT_TRUE(evals.ok()) << evals.status();
    EXPECT_EQ(evals->size(), 1u);
    auto stats = (*store)->GetJobStats(job_id_);
    ASSERT_TRUE(stats.ok()) << stats.status();
    EXPECT_EQ(stats->tokens, 3);
    // Writes are refused, not applied to the copy.
    absl::Status s = (*store)->UpdateJobState(job_id_, JobState::kFailed, "x");
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  }
  EXPECT_EQ(UserVersion(path_), 1);
  EXPECT_EQ(ReadBytes(path_), before);
  // A WAL reader may leave SQLite's -shm and an empty -wal (as `sqlite3
  // -readonly` does); nothing else, and no commit.
  for (const std::string& name : Listing(dir_)) {
    if (listing.count(name) != 0) continue;
    EXPECT_TRUE(name == "traj.db-shm" || name == "traj.db-wal") << name;
    if (name == "traj.db-wal") {
      EXPECT_EQ(fs::file_size(dir_ / name), 0u);
    }
  }
}

// A copy without write permission in a directory without write permission
// (as a researcher gets one). The immutable mode reads it without creating
// -wal/-shm files; kReadOnly on a file whose WAL cannot be created fails with
// a message that says what to do (only checkable when not root).
TEST_F(StoreReadOnlyTest, ReadOnlyCopyInAReadOnlyDirectory) {
  WriteCurrentFile();
  const fs::path ro = dir_ / "ro";
  fs::create_directories(ro);
  const std::string copy = (ro / "traj.db").string();
  fs::copy_file(path_, copy);
  ASSERT_EQ(chmod(copy.c_str(), 0444), 0);
  ASSERT_EQ(chmod(ro.c_str(), 0555), 0);
  const std::string before = ReadBytes(copy);
  {
    auto store = TrajectoryStore::Open(copy, WithAccess(Access::kImmutable));
    ASSERT_TRUE(store.ok()) << store.status();
    auto jobs = (*store)->ListJobs(JobFilter());
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    ASSERT_EQ(jobs->size(), 1u);
    EXPECT_EQ((*jobs)[0].id, job_id_);
    auto v = (*store)->SchemaVersion();
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(*v, CurrentSchemaVersion());
    JobRecord other = (*jobs)[0];
    other.id = NewId("job");
    EXPECT_EQ((*store)->CreateJob(other).code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ((*store)->SetMaxPageCount(1).status().code(),
              absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(Listing(ro), std::set<std::string>{"traj.db"});
  EXPECT_EQ(ReadBytes(copy), before);
  if (geteuid() != 0) {
    auto store = TrajectoryStore::Open(copy, WithAccess(Access::kReadOnly));
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.status().message().find("immutable"), std::string_view::npos)
        << store.status();
  }
}

// kReadOnly next to a live writer sees its commits; kImmutable would not see
// commits still in the -wal, so it refuses instead of answering wrongly.
TEST_F(StoreReadOnlyTest, LiveWriterReadOnlySeesCommitsImmutableRefuses) {
  auto writer = TrajectoryStore::Open(path_);
  ASSERT_TRUE(writer.ok()) << writer.status();
  JobRecord job;
  job.id = NewId("job");
  job.spec_json = "{}";
  job.problem = "allreduce";
  job.backend = "host";
  job.dtype = "f32";
  job.agent_kind = "search";
  job.created_wall_us = 1000;
  ASSERT_TRUE((*writer)->CreateJob(job).ok());
  auto reader = TrajectoryStore::Open(path_, WithAccess(Access::kReadOnly));
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE((*reader)->GetJob(job.id).ok());
  ASSERT_TRUE((*writer)->UpdateJobState(job.id, JobState::kRunning).ok());
  auto got = (*reader)->GetJob(job.id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->state, JobState::kRunning);
  auto imm = TrajectoryStore::Open(path_, WithAccess(Access::kImmutable));
  ASSERT_FALSE(imm.ok());
  EXPECT_EQ(imm.status().code(), absl::StatusCode::kFailedPrecondition) << imm.status();
}

// The read-only modes open a "file:" URI: characters that mean something in a
// URI ('?', '#', '%', spaces) must still name the same file.
TEST_F(StoreReadOnlyTest, PathWithUriCharacters) {
  const fs::path odd = dir_ / "a ?b#c%41&mode=rw";
  fs::create_directories(odd);
  path_ = (odd / "t?.db").string();
  WriteCurrentFile();
  for (Access a : {Access::kReadOnly, Access::kImmutable}) {
    auto store = TrajectoryStore::Open(path_, WithAccess(a));
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_TRUE((*store)->GetJob(job_id_).ok());
  }
}

TEST_F(StoreReadOnlyTest, MissingEmptyAndNewerFilesAreRefusedAndNotTouched) {
  auto missing = TrajectoryStore::Open(path_, WithAccess(Access::kReadOnly));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  EXPECT_FALSE(fs::exists(path_));

  { std::ofstream(path_).flush(); }  // an empty file: user_version 0
  auto empty = TrajectoryStore::Open(path_, WithAccess(Access::kReadOnly));
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kFailedPrecondition) << empty.status();
  EXPECT_EQ(fs::file_size(path_), 0u);
  fs::remove(path_);

  WriteCurrentFile();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  Exec(db, "PRAGMA user_version = " + std::to_string(CurrentSchemaVersion() + 1));
  ASSERT_EQ(sqlite3_close(db), SQLITE_OK);
  const std::string before = ReadBytes(path_);
  auto newer = TrajectoryStore::Open(path_, WithAccess(Access::kImmutable));
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(newer.status().message().find(std::to_string(CurrentSchemaVersion() + 1)),
            std::string_view::npos)
      << newer.status();
  EXPECT_EQ(ReadBytes(path_), before);
}

}  // namespace
}  // namespace pkforge::storage
