// `pkforge jobs|trajectory|plateau|show --db` are read-only analyses: the real
// binary on a copy without write permission (0444 file in a 0555 directory)
// and on a file written by an older schema version, which must not be
// migrated. Run as root, the commands run as uid 65534 (setpriv) so that
// permissions apply as they do for a researcher.
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "cli/testing/cli_test_util.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/migrations.h"
#include "storage/store.h"

namespace pkforge::cli {
namespace {

namespace fs = std::filesystem;

struct CmdResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

CmdResult Pkforge(const std::string& args) {
  std::string prefix;
  if (geteuid() == 0) prefix = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  test_util::Cmd c = test_util::Shell(prefix + std::string(PKFORGE_BIN) + " " + args + " 2>&1");
  return {c.rc, c.out};
}

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
  EXPECT_EQ(sqlite3_open_v2(("file:" + path + "?immutable=1").c_str(), &db,
                            SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr),
            SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr), SQLITE_OK);
  EXPECT_EQ(sqlite3_step(st), SQLITE_ROW);
  int v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

constexpr char kSource[] = "int pkf_run(){return 7;}";

class AnalysisDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "analysis_db_test.XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    // uid 65534 must reach the files below (mkdtemp makes the folder 0700).
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    ro_ = dir_ / "ro";
    fs::create_directories(ro_);
    db_ = (ro_ / "pkforge.db").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(ro_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }

  // The file as `chmod 0444` in a `chmod 0555` folder, and what it held.
  void MakeReadOnly() {
    ASSERT_TRUE(test_util::MakeReadOnly(db_).ok());
    bytes_ = ReadBytes(db_);
    listing_ = Listing(ro_);
  }

  void ExpectUntouched() {
    EXPECT_EQ(ReadBytes(db_), bytes_) << "the file changed";
    EXPECT_EQ(Listing(ro_), listing_) << "files appeared beside the file";
  }

  // Every --db command on the file: all read it, none writes.
  void RunAllCommands() {
    CmdResult jobs = Pkforge("jobs --db " + db_ + " --json");
    ASSERT_EQ(jobs.code, 0) << jobs.out;
    auto list = nlohmann::json::parse(jobs.out);
    ASSERT_EQ(list.size(), 1u) << jobs.out;
    EXPECT_EQ(list[0]["id"], job_id_);
    EXPECT_DOUBLE_EQ(list[0]["best_speedup"].get<double>(), 2.5);

    CmdResult traj = Pkforge("trajectory " + job_id_ + " --db " + db_ + " --format csv");
    ASSERT_EQ(traj.code, 0) << traj.out;
    EXPECT_NE(traj.out.find(",OK,1,2.5,2.5,"), std::string::npos) << traj.out;

    CmdResult plateau = Pkforge("plateau --db " + db_ + " --json");
    ASSERT_EQ(plateau.code, 0) << plateau.out;
    EXPECT_NE(plateau.out.find(job_id_), std::string::npos) << plateau.out;

    CmdResult show = Pkforge("show " + job_id_ + " --db " + db_);
    ASSERT_EQ(show.code, 0) << show.out;
    EXPECT_NE(show.out.find(job_id_), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("2.500x"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find(kSource), std::string::npos) << show.out;

    CmdResult show_json = Pkforge("show " + job_id_ + " --db " + db_ + " --json");
    ASSERT_EQ(show_json.code, 0) << show_json.out;
    auto j = nlohmann::json::parse(show_json.out);
    EXPECT_EQ(j["job"]["id"], job_id_);
    EXPECT_EQ(j["job"]["state"], "JOB_STATE_SUCCEEDED");
    EXPECT_EQ(j["job"]["spec"]["problem"], "allreduce");
    EXPECT_EQ(j["candidates"][0]["source"], kSource);
    EXPECT_EQ(j["best_curve"].size(), 1u) << j.dump();  // proto field names
  }

  fs::path dir_, ro_;
  std::string db_, job_id_, bytes_;
  std::set<std::string> listing_;
};

// Before: "attempt to write a readonly database" (the analysis opened the file
// for writing and switched it to WAL / migrated it).
TEST_F(AnalysisDbTest, ReadOnlyCopyInReadOnlyDirectory) {
  {
    auto store = storage::TrajectoryStore::Open(db_);
    ASSERT_TRUE(store.ok()) << store.status();
    storage::JobRecord job;
    job.id = job_id_ = NewId("job");
    job.spec_json = R"({"problem":"allreduce","backend":"BACKEND_HOST","worldSize":1})";
    job.problem = "allreduce";
    job.backend = "host";
    job.dtype = "f32";
    job.agent_kind = "search";
    job.strategy = "successive_halving";
    job.created_wall_us = 1'800'000'000'000'000;
    ASSERT_TRUE((*store)->CreateJob(job).ok());
    ASSERT_TRUE((*store)->UpdateJobState(job.id, storage::JobState::kRunning, "",
                                         job.created_wall_us).ok());
    storage::CandidateRecord c;
    c.source = kSource;
    c.sha256 = Sha256Hex(c.source);
    c.backend = "host";
    ASSERT_TRUE((*store)->PutCandidate(c).ok());
    storage::EvaluationRecord e;
    e.id = NewId("eval");
    e.job_id = job.id;
    e.candidate_sha256 = c.sha256;
    e.status = "OK";
    e.correct = true;
    e.speedup = 2.5;
    e.elapsed_ms = 4000;
    e.wall_us = job.created_wall_us + 4'000'000;
    // A size-ladder evaluation (issue #17 item 5): its multi-size score is in
    // the stored result.
    e.result_json = R"({"status":"OK","speedup":2.5,"multi_size_score":1.75})";
    ASSERT_TRUE((*store)->AddEvaluation(e).ok());
    ASSERT_TRUE((*store)->UpdateJobState(job.id, storage::JobState::kSucceeded, "",
                                         job.created_wall_us + 9'000'000).ok());
  }
  MakeReadOnly();
  RunAllCommands();
  // The multi-size score reaches the plateau analysis, its JSON and its table.
  CmdResult plateau = Pkforge("plateau --db " + db_ + " --json");
  ASSERT_EQ(plateau.code, 0) << plateau.out;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(plateau.out)["jobs"][0]["best_multi_size_score"].get<double>(),
                   1.75)
      << plateau.out;
  CmdResult table = Pkforge("plateau --db " + db_);
  EXPECT_NE(table.out.find("best multi-size score 1.750x"), std::string::npos) << table.out;
  ExpectUntouched();
}

// A schema-v1 file (the first released layout, WAL mode as the orchestrator
// leaves it) is read with every command and stays at version 1, byte for byte.
// Before: opening migrated it in place to the current version.
TEST_F(AnalysisDbTest, OlderSchemaFileIsReadAndNeverMigrated) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    Exec(db, "PRAGMA journal_mode = WAL");
    Exec(db, storage::internal::Migrations()[0].sql);
    Exec(db, "PRAGMA user_version = 1");
    job_id_ = NewId("job");
    const std::string sha = Sha256Hex(kSource);
    Exec(db, "INSERT INTO jobs (id, spec_json, problem, backend, world_size, dtype, agent_kind, "
             "strategy, state, created_wall_us, started_wall_us, finished_wall_us) VALUES ('" +
                 job_id_ + R"(', '{"problem":"allreduce"}', 'allreduce', 'host', 1, 'f32', )" +
                 "'search', 'successive_halving', 'succeeded', 1000, 1000, 9001000)");
    Exec(db, "INSERT INTO candidates VALUES ('" + sha + "', '" + kSource + "', 'host', 1000)");
    Exec(db, "INSERT INTO evaluations (id, job_id, candidate_sha256, status, correct, speedup, "
             "wall_us, elapsed_ms) VALUES ('" + NewId("eval") + "', '" + job_id_ + "', '" + sha +
                 "', 'OK', 1, 2.5, 4001000, 4000)");
    ASSERT_EQ(sqlite3_close(db), SQLITE_OK);
  }
  ASSERT_EQ(UserVersion(db_), 1);
  MakeReadOnly();
  RunAllCommands();
  ExpectUntouched();
  EXPECT_EQ(UserVersion(db_), 1);
}

// The same older file in a writable folder (the common case): still never
// migrated, every command works.
TEST_F(AnalysisDbTest, OlderSchemaFileInWritableFolderIsNotMigrated) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    Exec(db, storage::internal::Migrations()[0].sql);
    Exec(db, "PRAGMA user_version = 1");
    job_id_ = NewId("job");
    Exec(db, "INSERT INTO jobs (id, spec_json, problem, backend, world_size, dtype, agent_kind, "
             "state, created_wall_us) VALUES ('" + job_id_ +
                 "', '{}', 'allreduce', 'host', 1, 'f32', 'search', 'queued', 1000)");
    ASSERT_EQ(sqlite3_close(db), SQLITE_OK);
  }
  ASSERT_EQ(chmod(ro_.c_str(), 0777), 0);  // writable for uid 65534 too
  ASSERT_EQ(chmod(db_.c_str(), 0666), 0);
  CmdResult jobs = Pkforge("jobs --db " + db_);
  ASSERT_EQ(jobs.code, 0) << jobs.out;
  EXPECT_NE(jobs.out.find(job_id_), std::string::npos) << jobs.out;
  CmdResult show = Pkforge("show " + job_id_ + " --db " + db_);
  ASSERT_EQ(show.code, 0) << show.out;
  EXPECT_NE(show.out.find("no correct candidate yet"), std::string::npos) << show.out;
  EXPECT_EQ(UserVersion(db_), 1);
}

TEST_F(AnalysisDbTest, ShowDbErrors) {
  CmdResult missing = Pkforge("show " + NewId("job") + " --db " + (dir_ / "nope.db").string());
  EXPECT_EQ(missing.code, 3) << missing.out;
  EXPECT_FALSE(fs::exists(dir_ / "nope.db"));
  {
    auto store = storage::TrajectoryStore::Open(db_);
    ASSERT_TRUE(store.ok()) << store.status();
  }
  CmdResult unknown = Pkforge("show " + NewId("job") + " --db " + db_);
  EXPECT_EQ(unknown.code, 3) << unknown.out;
  CmdResult malformed = Pkforge("show ../../etc/passwd --db " + db_);
  EXPECT_EQ(malformed.code, 2) << malformed.out;
}

}  // namespace
}  // namespace pkforge::cli
