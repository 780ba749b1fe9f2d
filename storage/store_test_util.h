// Shared by the trajectory store's tests (one store_test binary):
// store_jobs_test.cc (opening, job rows), store_trajectory_test.cc (turns,
// LLM calls, candidates, evaluations, input validation, events) and
// store_writes_test.cc (concurrent writers, steps, a full database). Record
// makers with valid defaults and StoreTest, a store on a fresh file per test.
//
// Thread safety: the makers are pure; a StoreTest's store is shared by the
// threads a test starts, like the store it stands for.
#pragma once

#include <sqlite3.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "common/ids.h"
#include "common/sha256.h"
#include "gtest/gtest.h"
#include "storage/store.h"

namespace pkforge::storage {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline std::string MakeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "store_test.XXXXXX").string();
  char* dir = mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr);
  return tmpl;
}

inline JobRecord MakeJob(std::string problem = "allreduce", std::string model = "gpt-x",
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

inline CandidateRecord MakeCandidate(const std::string& source) {
  CandidateRecord c;
  c.source = source;
  c.sha256 = Sha256Hex(source);
  c.backend = "cuda";
  c.first_seen_wall_us = 1'700'000'000'000'001;
  return c;
}

inline EvaluationRecord MakeEval(const std::string& job_id, const std::string& sha,
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

inline EventRecord MakeEvent(const std::string& job_id, std::string payload,
                             std::string type = "llm_call") {
  EventRecord e;
  e.job_id = job_id;
  e.wall_us = 1'700'000'000'200'000;
  e.elapsed_ms = 42;
  e.type = std::move(type);
  e.payload_json = std::move(payload);
  return e;
}

inline LlmCallRecord MakeLlmCall(const std::string& job_id, const std::string& turn_id) {
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

}  // namespace pkforge::storage
