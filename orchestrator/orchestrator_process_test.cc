// The daemons as processes: pkforge-orchestrator SIGKILLed mid-job and
// restarted on the same database; a pkforge-fake-executor SIGKILLed
// mid-evaluation with a second one configured; the `pkforge` CLI against a
// running orchestrator.
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "agent/testing/fake_http_server.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "orchestrator/convert.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/testing/fake_executor.h"
#include "orchestrator/testing/test_util.h"

namespace pkforge::orchestrator {
namespace {

using ::testing::HasSubstr;
using testing::ChildProcess;

constexpr char kKeyEnv[] = "PKF_ORCH_PROC_TEST_KEY";

std::string Query(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    std::string err = sqlite3_errmsg(h);
    sqlite3_close(h);
    return "ERROR " + err;
  }
  std::string out;
  while (sqlite3_step(st) == SQLITE_ROW) {
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const unsigned char* t = sqlite3_column_text(st, i);
      out += (i ? "|" : "") + std::string(t ? reinterpret_cast<const char*>(t) : "NULL");
    }
    out += "\n";
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return out;
}

struct CmdResult {
  int code = -1;
  std::string out;
};

CmdResult Pkforge(const std::string& args) {
  CmdResult r;
  std::string cmd = std::string(PKFORGE_BIN) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

absl::StatusOr<std::unique_ptr<ChildProcess>> StartOrchestratorProcess(
    const std::string& dir, const std::vector<std::string>& executors,
    const std::string& provider_url = "http://127.0.0.1:1/v1") {
  std::vector<std::string> argv = {PKFORGE_ORCH_BIN,      "--listen",
                                   "127.0.0.1:0",         "--db",
                                   dir + "/traj.db",      "--heartbeat-interval",
                                   "0.2",                 "--health-interval",
                                   "0.3"};
  for (const auto& e : executors) {
    argv.push_back("--executor");
    argv.push_back(e);
  }
  argv.push_back("--provider");
  argv.push_back(std::string("test=openai,") + provider_url + "," + kKeyEnv);
  return ChildProcess::Start(argv, 20, dir + "/orchestrator.log");
}

absl::StatusOr<std::unique_ptr<ChildProcess>> StartFakeExecutorProcess(
    int delay_ms, const std::string& log_file) {
  return ChildProcess::Start({PKFORGE_FAKE_EXECUTOR_BIN, "--delay-ms", std::to_string(delay_ms),
                              "--log-file", log_file});
}

absl::StatusOr<v1::Job> Submit(v1::Orchestrator::Stub* stub, const v1::JobSpec& spec,
                               const std::string& client_request_id = "") {
  grpc::ClientContext ctx;
  v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  req.set_client_request_id(client_request_id);
  v1::Job job;
  grpc::Status s = stub->SubmitJob(&ctx, req, &job);
  if (!s.ok()) return absl::UnknownError(s.error_message());
  return job;
}

class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("orch_proc");
    setenv(kKeyEnv, "sk-proc-test-key-0123456789", 1);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ProcessTest, SigkillMidJobThenRestartResumesOrInterruptsAndLosesNothing) {
  auto exec = StartFakeExecutorProcess(60, dir_ + "/exec.log");
  ASSERT_TRUE(exec.ok()) << exec.status();
  auto provider = agent::testing::FakeHttpServer::Start();
  ASSERT_TRUE(provider.ok());
  (*provider)->SetDefault([](const agent::testing::RecordedRequest&) {
    auto r = agent::testing::FakeHttpServer::OpenAiReply(
        "```cuda\n#include \"pkforge/candidate.h\"\n// llm kernel\n```\n", 100, 50);
    r.delay_ms = 100;
    return r;
  });
  auto orch = StartOrchestratorProcess(dir_, {(*exec)->address()}, (*provider)->base_url() + "/v1");
  ASSERT_TRUE(orch.ok()) << orch.status();
  auto stub = testing::Client((*orch)->address());
  auto search = Submit(stub.get(), testing::SearchSpec(16, 60));
  ASSERT_TRUE(search.ok()) << search.status();
  auto llm = Submit(stub.get(), testing::LlmSpec("test", 50));
  ASSERT_TRUE(llm.ok()) << llm.status();
  // Let both make progress, then kill the orchestrator without warning.
  auto before = testing::Watch(stub.get(), search->id(), 0, false, 12);
  ASSERT_EQ(before.events.size(), 12u);
  (*orch)->Kill(SIGKILL);
  (*orch)->Wait();

  const std::string db = dir_ + "/traj.db";
  EXPECT_EQ(Query(db, "PRAGMA integrity_check"), "ok\n");
  const std::string events_before =
      Query(db, "SELECT job_id, seq, type, payload_json FROM events ORDER BY job_id, seq");
  const std::string turns_before = Query(db, "SELECT id, turn_index FROM turns ORDER BY id");
  EXPECT_EQ(Query(db, "SELECT state FROM jobs WHERE id='" + search->id() + "'"), "running\n");

  auto again = StartOrchestratorProcess(dir_, {(*exec)->address()}, (*provider)->base_url() + "/v1");
  ASSERT_TRUE(again.ok()) << again.status();
  stub = testing::Client((*again)->address());
  auto s_done = testing::WaitForEnd(stub.get(), search->id(), 30);
  auto l_done = testing::WaitForEnd(stub.get(), llm->id(), 30);
  ASSERT_TRUE(s_done.ok()) << s_done.status();
  ASSERT_TRUE(l_done.ok()) << l_done.status();
  // The search job restarted as attempt 2 and finished; the llm job was interrupted.
  EXPECT_EQ(s_done->state(), v1::JOB_STATE_SUCCEEDED) << s_done->error();
  EXPECT_LE(s_done->evaluations(), 16);
  EXPECT_EQ(l_done->state(), v1::JOB_STATE_INTERRUPTED);
  EXPECT_THAT(l_done->error(), HasSubstr("llm jobs are not resumed"));

  // Everything logged before the kill is still there, unchanged, as a prefix.
  const std::string events_after =
      Query(db, "SELECT job_id, seq, type, payload_json FROM events ORDER BY job_id, seq");
  std::istringstream old_lines(events_before);
  std::string line;
  while (std::getline(old_lines, line)) {
    EXPECT_NE(events_after.find(line + "\n"), std::string::npos) << "lost: " << line;
  }
  std::istringstream old_turns(turns_before);
  while (std::getline(old_turns, line)) {
    EXPECT_NE(Query(db, "SELECT id, turn_index FROM turns ORDER BY id").find(line),
              std::string::npos);
  }
  // Watching works as before: from 0, contiguous, ending with the final state.
  for (const auto& [id, state] : {std::pair{search->id(), v1::JOB_STATE_SUCCEEDED},
                                  std::pair{llm->id(), v1::JOB_STATE_INTERRUPTED}}) {
    auto all = testing::Watch(stub.get(), id, 0);
    ASSERT_TRUE(all.status.ok()) << all.status.error_message();
    for (size_t i = 0; i < all.events.size(); ++i) ASSERT_EQ(all.events[i].seq(), int64_t(i + 1));
    ASSERT_FALSE(all.events.empty());
    EXPECT_EQ(all.events.back().state_changed().state(), state);
  }
  auto all = testing::Watch(stub.get(), search->id(), 0, true);
  bool attempt2 = false;
  for (const auto& e : all.events) {
    if (e.has_state_changed() && e.state_changed().reason().find("attempt 2") != std::string::npos) {
      attempt2 = true;
    }
  }
  EXPECT_TRUE(attempt2);
  EXPECT_EQ(Query(db, "SELECT COUNT(*) = COUNT(DISTINCT turn_index) FROM turns WHERE job_id='" +
                          search->id() + "'"),
            "1\n");
  (*again)->Kill(SIGTERM);
  EXPECT_EQ((*again)->Wait(), 0);
  EXPECT_EQ(Query(db, "PRAGMA integrity_check"), "ok\n");
}

absl::StatusOr<v1::ListJobsResponse> ListJobs(v1::Orchestrator::Stub* stub) {
  grpc::ClientContext ctx;
  v1::ListJobsRequest req;
  req.set_page_size(1000);
  v1::ListJobsResponse resp;
  grpc::Status s = stub->ListJobs(&ctx, req, &resp);
  if (!s.ok()) return absl::UnknownError(s.error_message());
  return resp;
}

// SubmitJob's client_request_id outlives the process: after a SIGKILL (no
// shutdown, nothing flushed beyond what the store made durable) a restarted
// orchestrator answers a repeat with the first job, whether that job is still
// active (resumed) or long finished, and never makes a second one.
TEST_F(ProcessTest, ClientRequestIdIsIdempotentAcrossSigkillAndRestart) {
  auto exec = StartFakeExecutorProcess(100, dir_ + "/exec.log");
  ASSERT_TRUE(exec.ok()) << exec.status();
  const std::string db = dir_ + "/traj.db";
  auto orch = StartOrchestratorProcess(dir_, {(*exec)->address()});
  ASSERT_TRUE(orch.ok()) << orch.status();
  auto stub = testing::Client((*orch)->address());
  auto first = Submit(stub.get(), testing::SearchSpec(4, 60), "abc");
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string id = first->id();
  auto same = Submit(stub.get(), testing::SearchSpec(4, 60), "abc");
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->id(), id);
  (*orch)->Kill(SIGKILL);
  (*orch)->Wait();
  EXPECT_EQ(Query(db, "SELECT id, client_request_id FROM jobs"), id + "|abc\n");

  // Restart on the same database: the repeat finds the job (resumed or
  // finished by now, either way the same one).
  auto again = StartOrchestratorProcess(dir_, {(*exec)->address()});
  ASSERT_TRUE(again.ok()) << again.status();
  stub = testing::Client((*again)->address());
  auto repeat = Submit(stub.get(), testing::SearchSpec(4, 60), "abc");
  ASSERT_TRUE(repeat.ok()) << repeat.status();
  EXPECT_EQ(repeat->id(), id);
  auto other = Submit(stub.get(), testing::SearchSpec(1, 60), "def");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(other->id(), id);
  auto listed = ListJobs(stub.get());
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::multiset<std::string> ids;
  for (const auto& j : listed->jobs()) ids.insert(j.id());
  EXPECT_EQ(ids.count(id), 1u);
  EXPECT_EQ(ids.size(), 2u);
  auto done = testing::WaitForEnd(stub.get(), id, 30);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->error();
  ASSERT_TRUE(testing::WaitForEnd(stub.get(), other->id(), 30).ok());

  // Once more, with the job finished: the answer now comes from the store
  // alone (nothing of it is active in the new process).
  (*again)->Kill(SIGKILL);
  (*again)->Wait();
  auto third = StartOrchestratorProcess(dir_, {(*exec)->address()});
  ASSERT_TRUE(third.ok()) << third.status();
  stub = testing::Client((*third)->address());
  auto late = Submit(stub.get(), testing::SearchSpec(4, 60), "abc");
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_EQ(late->id(), id);
  EXPECT_EQ(late->state(), v1::JOB_STATE_SUCCEEDED);
  listed = ListJobs(stub.get());
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->jobs_size(), 2);
  EXPECT_EQ(Query(db, "SELECT COUNT(*) FROM jobs WHERE client_request_id = 'abc'"), "1\n");
  (*third)->Kill(SIGTERM);
  EXPECT_EQ((*third)->Wait(), 0);
  EXPECT_EQ(Query(db, "PRAGMA integrity_check"), "ok\n");
}

TEST_F(ProcessTest, ExecutorKilledMidEvaluationIsRetriedOnTheOther) {
  auto a = StartFakeExecutorProcess(1500, dir_ + "/a.log");
  auto b = StartFakeExecutorProcess(1500, dir_ + "/b.log");
  ASSERT_TRUE(a.ok() && b.ok());
  OrchestratorConfig c;
  c.listen = "127.0.0.1:0";
  c.db = dir_ + "/traj.db";
  c.executors = {ExecutorEndpoint{.address = (*a)->address()},
                 ExecutorEndpoint{.address = (*b)->address()}};
  c.health_interval_s = 0.3;
  auto orch = Orchestrator::Start(c);
  ASSERT_TRUE(orch.ok()) << orch.status();
  std::filesystem::create_directories(dir_ + "/cands");
  std::ofstream(dir_ + "/cands/k1.cc") << "// candidate one\n";
  auto stub = testing::Client((*orch)->address());
  auto job = Submit(stub.get(), testing::ReplaySpec(dir_ + "/cands"));
  ASSERT_TRUE(job.ok()) << job.status();
  // Kill whichever executor got the evaluation, while it runs.
  ChildProcess* victim = nullptr;
  std::string survivor;
  for (int i = 0; i < 200 && victim == nullptr; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (std::filesystem::exists(dir_ + "/a.log")) {
      victim = a->get();
      survivor = (*b)->address();
    } else if (std::filesystem::exists(dir_ + "/b.log")) {
      victim = b->get();
      survivor = (*a)->address();
    }
  }
  ASSERT_NE(victim, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  victim->Kill(SIGKILL);
  victim->Wait();
  auto done = testing::WaitForEnd(stub.get(), job->id(), 20);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->error();
  EXPECT_EQ(done->evaluations(), 1);
  EXPECT_EQ(Query(c.db, "SELECT status, executor FROM evaluations WHERE role = 'search'"),
            "OK|" + survivor + "\n");
  grpc::ClientContext ctx;
  v1::ListExecutorsResponse ex;
  ASSERT_TRUE(stub->ListExecutors(&ctx, v1::ListExecutorsRequest(), &ex).ok());
  int healthy = 0;
  for (const auto& e : ex.executors()) healthy += e.healthy();
  EXPECT_EQ(healthy, 1);
}

TEST_F(ProcessTest, CliCommandsAgainstARunningOrchestrator) {
  auto exec = testing::FakeExecutor::Start({.delay_ms = 5});
  ASSERT_TRUE(exec.ok());
  OrchestratorConfig c;
  c.listen = "127.0.0.1:0";
  c.db = dir_ + "/traj.db";
  c.executors = {ExecutorEndpoint{.address = (*exec)->address()}};
  c.heartbeat_interval_s = 0.2;
  auto orch = Orchestrator::Start(c);
  ASSERT_TRUE(orch.ok()) << orch.status();
  const std::string at = " --orchestrator " + (*orch)->address();

  CmdResult sub = Pkforge("submit" + at +
                          " --problem allreduce --backend host --world-size 2 --agent search "
                          "--max-evaluations 5 --budget 60s --label cli --json");
  ASSERT_EQ(sub.code, 0) << sub.out;
  const std::string id = nlohmann::json::parse(sub.out)["id"].get<std::string>();
  CmdResult watch = Pkforge("watch " + id + at);
  EXPECT_EQ(watch.code, 0) << watch.out;
  EXPECT_THAT(watch.out, HasSubstr("succeeded"));
  EXPECT_THAT(watch.out, HasSubstr("evals"));
  CmdResult show = Pkforge("show " + id + at + " --source-out " + dir_ + "/best.cc");
  EXPECT_EQ(show.code, 0) << show.out;
  EXPECT_THAT(show.out, HasSubstr("best candidate"));
  EXPECT_TRUE(std::filesystem::file_size(dir_ + "/best.cc") > 0);
  CmdResult jobs = Pkforge("jobs" + at + " --json");
  ASSERT_EQ(jobs.code, 0) << jobs.out;
  auto rows = nlohmann::json::parse(jobs.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["id"], id);
  EXPECT_EQ(rows[0]["state"], "succeeded");
  CmdResult traj = Pkforge("trajectory " + id + at + " --format csv");
  EXPECT_EQ(traj.code, 0) << traj.out;
  EXPECT_THAT(traj.out, HasSubstr("evaluation_id,elapsed_s"));
  CmdResult plateau = Pkforge("plateau" + at + " --json");
  EXPECT_EQ(plateau.code, 0) << plateau.out;
  EXPECT_THAT(plateau.out, HasSubstr(id));
  CmdResult problems = Pkforge("problems" + at);
  EXPECT_EQ(problems.code, 0);
  EXPECT_THAT(problems.out, HasSubstr("reducescatter"));
  CmdResult executors = Pkforge("executors" + at + " --json");
  EXPECT_EQ(executors.code, 0);
  EXPECT_THAT(executors.out, HasSubstr((*exec)->address()));

  // Cancel a long job: cancel succeeds, watch then exits 1 (not succeeded).
  (*exec)->set_delay_ms(20000);
  CmdResult sub2 = Pkforge("submit" + at + " --agent search --max-evaluations 5 --budget 60s");
  ASSERT_EQ(sub2.code, 0) << sub2.out;
  std::string id2 = sub2.out.substr(0, sub2.out.find('\n'));
  CmdResult cancel = Pkforge("cancel " + id2 + at + " --reason cli-test");
  EXPECT_EQ(cancel.code, 0) << cancel.out;
  CmdResult watch2 = Pkforge("watch " + id2 + at);
  EXPECT_EQ(watch2.code, 1) << watch2.out;
  EXPECT_THAT(watch2.out, HasSubstr("cancelled"));
  // Errors map to exit codes: unknown job 3, bad input 2, no server 4.
  EXPECT_EQ(Pkforge("show job_01ARZ3NDEKTSV4RRFFQ69G5FAV" + at).code, 3);
  EXPECT_EQ(Pkforge("submit" + at + " --problem nope").code, 2);
  EXPECT_EQ(Pkforge("jobs --orchestrator 127.0.0.1:1").code, 4);
}

}  // namespace
}  // namespace pkforge::orchestrator
