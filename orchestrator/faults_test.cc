// Faults of issue #15 (items 4-7, 10), each over real gRPC and a real SQLite
// file: executors that go away and come back, an orchestrator SIGKILLed and
// restarted (the real binary), a full database (SQLite's max_page_count: the
// same SQLITE_FULL a full disk gives), and the WatchJob/GetJob/CancelJob
// contract around a job's end.
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>
#include <thread>

#include "common/ids.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/convert.h"
#include "orchestrator/event_log.h"
#include "orchestrator/job_sink.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/testing/fake_executor.h"
#include "orchestrator/testing/test_util.h"
#include "storage/store.h"

namespace pkforge::orchestrator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ChildProcess;
using testing::FakeExecutor;

int64_t NowWallUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Follows a job's events from `after_seq` until `done` holds for one of them,
// the stream ends, or `timeout_s` passes (then `timed_out`).
struct Followed {
  std::vector<v1::Event> events;
  grpc::Status status;
  bool matched = false;
};
Followed Follow(v1::Orchestrator::Stub* stub, const std::string& job_id, int64_t after_seq,
                const std::function<bool(const v1::Event&)>& done, double timeout_s) {
  Followed out;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  v1::WatchJobRequest req;
  req.set_job_id(job_id);
  req.set_after_seq(after_seq);
  auto reader = stub->WatchJob(&ctx, req);
  v1::WatchJobResponse resp;
  while (reader->Read(&resp)) {
    if (!resp.has_event()) continue;
    out.events.push_back(resp.event());
    if (done && done(resp.event())) {
      out.matched = true;
      ctx.TryCancel();
      break;
    }
  }
  out.status = reader->Finish();
  return out;
}

std::vector<v1::Event> AllEvents(v1::Orchestrator::Stub* stub, const std::string& job_id) {
  return testing::Watch(stub, job_id, 0, /*no_follow=*/true).events;
}

absl::StatusOr<v1::Job> Submit(v1::Orchestrator::Stub* stub, const v1::JobSpec& spec) {
  grpc::ClientContext ctx;
  v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  v1::Job job;
  grpc::Status s = stub->SubmitJob(&ctx, req, &job);
  if (!s.ok()) return absl::UnknownError(s.error_message());
  return job;
}

absl::StatusOr<v1::Job> GetJob(v1::Orchestrator::Stub* stub, const std::string& id) {
  grpc::ClientContext ctx;
  v1::GetJobRequest req;
  req.set_job_id(id);
  v1::Job job;
  grpc::Status s = stub->GetJob(&ctx, req, &job);
  if (!s.ok()) return absl::UnknownError(s.error_message());
  return job;
}

absl::StatusOr<v1::Job> CancelJob(v1::Orchestrator::Stub* stub, const std::string& id,
                                  const std::string& reason) {
  grpc::ClientContext ctx;
  v1::CancelJobRequest req;
  req.set_job_id(id);
  req.set_reason(reason);
  v1::Job job;
  grpc::Status s = stub->CancelJob(&ctx, req, &job);
  if (!s.ok()) return absl::UnknownError(s.error_message());
  return job;
}

bool IsWaiting(const v1::Event& e) {
  return e.has_waiting_for_executor() && e.waiting_for_executor().waiting();
}

// Best-improved events of a job: each strictly beats the one before and
// names it as `previous`.
void ExpectBestImprovedMonotone(const std::vector<v1::Event>& events) {
  double best = 0;
  int n = 0;
  for (const auto& e : events) {
    if (!e.has_best_improved()) continue;
    ++n;
    EXPECT_GT(e.best_improved().speedup(), best) << "seq " << e.seq() << " is no improvement";
    EXPECT_DOUBLE_EQ(e.best_improved().previous(), best) << "seq " << e.seq();
    best = std::max(best, e.best_improved().speedup());
  }
  EXPECT_GT(n, 0);
}

class FaultsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("orch_faults"); }
  void TearDown() override {
    orch_.reset();
    std::filesystem::remove_all(dir_);
  }
  OrchestratorConfig Config(const std::string& executor) {
    OrchestratorConfig c;
    c.listen = "127.0.0.1:0";
    c.db = dir_ + "/traj.db";
    c.executors.push_back(ExecutorEndpoint{.address = executor});
    c.heartbeat_interval_s = 0.2;
    c.health_interval_s = 0.2;
    return c;
  }
  void Start(const OrchestratorConfig& c) {
    auto o = Orchestrator::Start(c);
    ASSERT_TRUE(o.ok()) << o.status();
    orch_ = std::move(*o);
    stub_ = testing::Client(orch_->address());
  }
  std::string dir_;
  std::unique_ptr<Orchestrator> orch_;
  std::unique_ptr<v1::Orchestrator::Stub> stub_;
};

// Item 4: an executor restart cut off every evaluation in flight and jobs
// failed within milliseconds ("no healthy executor can run ..."). Jobs now
// say they wait, and finish once the executor is back.
TEST_F(FaultsTest, JobsWaitForARestartedExecutorInsteadOfFailing) {
  auto exec = FakeExecutor::Start({.delay_ms = 2000});
  ASSERT_TRUE(exec.ok()) << exec.status();
  const std::string address = (*exec)->address();
  Start(Config(address));
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto job = Submit(stub_.get(), testing::SearchSpec(3, 60));
    ASSERT_TRUE(job.ok()) << job.status();
    ids.push_back(job->id());
  }
  // Every job has an evaluation on the executor; then it goes away.
  for (const auto& id : ids) {
    auto f = Follow(stub_.get(), id, 0, [](const v1::Event& e) { return e.has_evaluation_started(); },
                    20);
    ASSERT_TRUE(f.matched) << id;
  }
  (*exec)->Shutdown();
  exec->reset();
  for (const auto& id : ids) {
    auto f = Follow(stub_.get(), id, 0, IsWaiting, 20);
    ASSERT_TRUE(f.matched) << "job " << id << " did not report waiting for an executor; last "
                           << (f.events.empty() ? "" : f.events.back().DebugString());
    EXPECT_THAT(f.events.back().waiting_for_executor().reason(), HasSubstr("no healthy executor"));
    auto job = GetJob(stub_.get(), id);
    ASSERT_TRUE(job.ok());
    EXPECT_EQ(job->state(), v1::JOB_STATE_RUNNING) << job->error();
  }
  // The executor comes back on the same address: the jobs go on.
  testing::FakeExecutorOptions again;
  again.listen = address;
  again.delay_ms = 5;
  auto back = FakeExecutor::Start(again);
  ASSERT_TRUE(back.ok()) << back.status();
  for (const auto& id : ids) {
    auto done = testing::WaitForEnd(stub_.get(), id, 60);
    ASSERT_TRUE(done.ok()) << done.status();
    EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->error();
    EXPECT_GT(done->evaluations(), 0);
    bool resumed = false;
    for (const auto& e : AllEvents(stub_.get(), id)) {
      if (e.has_waiting_for_executor() && !e.waiting_for_executor().waiting()) resumed = true;
    }
    EXPECT_TRUE(resumed) << id;
  }
}

// Item 6: the database fills up while a job runs. Its end cannot be stored;
// it used to stay running forever (watch hung, cancel changed nothing). The
// end is retried, GetJob says so, cancel still works, and once space is back
// the job ends and watchers see it.
TEST_F(FaultsTest, FullDatabaseEndIsRetriedAndCancelStillWorks) {
  auto exec = FakeExecutor::Start({.delay_ms = 1500});
  ASSERT_TRUE(exec.ok()) << exec.status();
  Start(Config((*exec)->address()));
  auto job = Submit(stub_.get(), testing::SearchSpec(50, 120));
  ASSERT_TRUE(job.ok()) << job.status();
  auto started = Follow(stub_.get(), job->id(), 0,
                        [](const v1::Event& e) { return e.has_evaluation_started(); }, 20);
  ASSERT_TRUE(started.matched);

  // Fill the file while the evaluation runs: the limit becomes the current
  // size, small events of another job take the free space that is left.
  storage::TrajectoryStore* store = orch_->store();
  storage::JobRecord filler;
  filler.id = NewId("job");
  filler.spec_json = "{}";
  filler.problem = "filler";
  filler.backend = "host";
  filler.dtype = "f32";
  filler.agent_kind = "search";
  filler.state = storage::JobState::kSucceeded;
  ASSERT_TRUE(store->CreateJob(filler).ok());
  ASSERT_TRUE(store->SetMaxPageCount(1).ok());
  absl::Status full;
  for (int i = 0; i < 100000 && full.ok(); ++i) {
    storage::EventRecord r;
    r.job_id = filler.id;
    r.type = "log";
    r.payload_json = "{}";
    full = store->AppendEvent(r).status();
  }
  ASSERT_THAT(std::string(full.message()), HasSubstr("full"));

  // The evaluation's result cannot be stored, the job stops, and its end
  // cannot be stored either: it is being retried, and GetJob says so.
  absl::StatusOr<v1::Job> now;
  for (int i = 0; i < 400; ++i) {
    now = GetJob(stub_.get(), job->id());
    ASSERT_TRUE(now.ok()) << now.status();
    if (now->error().find("recording its end failed") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(now->state(), v1::JOB_STATE_RUNNING);
  EXPECT_THAT(now->error(), HasSubstr("recording its end failed"));
  EXPECT_THAT(now->error(), HasSubstr("full"));

  // Cancel while the disk is still full: accepted, reported as cancelling.
  auto cancel = CancelJob(stub_.get(), job->id(), "disk-full-test");
  ASSERT_TRUE(cancel.ok()) << cancel.status();
  EXPECT_EQ(cancel->state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(cancel->stop_reason(), "cancelling: disk-full-test");

  // Space comes back: the retried end (now the cancel) is stored, the watch
  // ends with it, and GetJob and the database agree.
  ASSERT_TRUE(store->SetMaxPageCount(1 << 30).ok());
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 30);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_THAT(done->stop_reason(), HasSubstr("cancelled: disk-full-test"));
  EXPECT_THAT(done->stop_reason(), HasSubstr("had ended as failed"));
  auto watch = Follow(stub_.get(), job->id(), 0, nullptr, 20);
  EXPECT_TRUE(watch.status.ok()) << watch.status.error_message();
  ASSERT_FALSE(watch.events.empty());
  EXPECT_EQ(watch.events.back().state_changed().state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(store->GetJob(job->id())->state, storage::JobState::kCancelled);
}

// Item 10: a watch from beyond the last event waited forever (heartbeats
// with last_seq = 10^12, also after the job ended); it is refused now.
TEST_F(FaultsTest, WatchFromBeyondTheLastEventIsRefused) {
  auto exec = FakeExecutor::Start({.delay_ms = 5});
  ASSERT_TRUE(exec.ok()) << exec.status();
  Start(Config((*exec)->address()));
  auto job = Submit(stub_.get(), testing::SearchSpec(2, 60));
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 30);
  ASSERT_TRUE(done.ok()) << done.status();
  const size_t n = AllEvents(stub_.get(), job->id()).size();
  auto far = Follow(stub_.get(), job->id(), 1'000'000'000'000, nullptr, 10);
  EXPECT_EQ(far.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << far.status.error_message();
  EXPECT_THAT(far.status.error_message(), HasSubstr("after_seq"));
  // The last seq itself is a valid cursor: nothing more to send, and it ends.
  auto at_end = Follow(stub_.get(), job->id(), static_cast<int64_t>(n), nullptr, 10);
  EXPECT_TRUE(at_end.status.ok()) << at_end.status.error_message();
  EXPECT_TRUE(at_end.events.empty());
}

// Item 10: CancelJob's reply said RUNNING for the job it had just cancelled.
TEST_F(FaultsTest, CancelRepliesWithTheStateAfterTheCancel) {
  auto exec = FakeExecutor::Start({.delay_ms = 20000});
  ASSERT_TRUE(exec.ok()) << exec.status();
  Start(Config((*exec)->address()));
  auto job = Submit(stub_.get(), testing::SearchSpec(5, 60));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(Follow(stub_.get(), job->id(), 0,
                     [](const v1::Event& e) { return e.has_evaluation_started(); }, 20)
                  .matched);
  auto cancelled = CancelJob(stub_.get(), job->id(), "enough");
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(cancelled->stop_reason(), "cancelled: enough");
  EXPECT_GT(cancelled->finished_wall_us(), 0);
}

// Item 10: GetJob right after WatchJob delivered the final state still said
// RUNNING (the view changed only after the row was updated). Many jobs end
// at once to make the window, when there is one, likely to be hit.
TEST_F(FaultsTest, GetJobAgreesWithTheEndAWatcherSaw) {
  auto exec = FakeExecutor::Start({.delay_ms = 5});
  ASSERT_TRUE(exec.ok()) << exec.status();
  Start(Config((*exec)->address()));
  constexpr int kJobs = 12;
  std::vector<std::string> ids;
  for (int i = 0; i < kJobs; ++i) {
    auto job = Submit(stub_.get(), testing::SearchSpec(1, 60));
    ASSERT_TRUE(job.ok()) << job.status();
    ids.push_back(job->id());
  }
  std::vector<std::thread> watchers;
  std::vector<std::string> seen(kJobs);
  for (int i = 0; i < kJobs; ++i) {
    watchers.emplace_back([&, i] {
      auto stub = testing::Client(orch_->address());
      v1::JobState end = v1::JOB_STATE_UNSPECIFIED;
      Follow(stub.get(), ids[i], 0,
             [&](const v1::Event& e) {
               if (!e.has_state_changed() || !IsTerminal(e.state_changed().state())) return false;
               end = e.state_changed().state();
               return true;
             },
             60);
      auto got = GetJob(stub.get(), ids[i]);
      seen[i] = fmt::format("{} {}", static_cast<int>(end),
                            got.ok() ? static_cast<int>(got->state()) : -1);
    });
  }
  for (auto& t : watchers) t.join();
  for (int i = 0; i < kJobs; ++i) {
    EXPECT_EQ(seen[i], fmt::format("{} {}", static_cast<int>(v1::JOB_STATE_SUCCEEDED),
                                   static_cast<int>(v1::JOB_STATE_SUCCEEDED)))
        << ids[i] << ": watch end vs GetJob";
  }
}

// Item 5: best_improved events that were no improvement (1.028x, then
// 0.808x): two evaluations of a job record in the other order than they
// were decided, and a resumed attempt starts without a best.
TEST(JobSinkBestTest, BestImprovedOnlyWhenItBeatsTheJobsBest) {
  const std::string dir = testing::MakeTempDir("orch_sink");
  auto store = storage::TrajectoryStore::Open(dir + "/traj.db");
  ASSERT_TRUE(store.ok()) << store.status();
  EventLog log(store->get(), nullptr);
  storage::JobRecord r;
  r.id = NewId("job");
  r.spec_json = "{}";
  r.problem = "allreduce";
  r.backend = "host";
  r.dtype = "f32";
  r.agent_kind = "search";
  ASSERT_TRUE((*store)->CreateJob(r).ok());
  auto best_events = [&] {
    std::vector<std::pair<double, double>> out;
    auto records = (*store)->ReadEvents(r.id, 0);
    EXPECT_TRUE(records.ok()) << records.status();
    if (!records.ok()) return out;
    for (const auto& rec : *records) {
      if (rec.type != "best_improved") continue;
      auto ev = EventFromRecord(rec);
      out.emplace_back(ev->best_improved().speedup(), ev->best_improved().previous());
    }
    return out;
  };
  auto entry = [&](double speedup, double previous) {
    agent::BestImprovedEntry e;
    e.job_id = r.id;
    e.evaluation_id = NewId("eval");
    e.speedup = speedup;
    e.previous = previous;
    return e;
  };
  JobProgress progress;
  {
    JobSink sink(r.id, "host", {}, &log, &progress, nullptr);
    // Decided 0.808 (over nothing), then 1.028 (over 0.808), recorded the
    // other way round.
    ASSERT_TRUE(sink.OnBestImproved(entry(1.028, 0.808)).ok());
    ASSERT_TRUE(sink.OnBestImproved(entry(0.808, 0)).ok());
  }
  // A resumed attempt: a fresh agent with no best of its own.
  {
    JobSink sink(r.id, "host", {.turn_index = 3, .elapsed_ms = 5000}, &log, &progress, nullptr);
    ASSERT_TRUE(sink.OnBestImproved(entry(0.9, 0)).ok());
    ASSERT_TRUE(sink.OnBestImproved(entry(1.5, 0.9)).ok());
  }
  EXPECT_EQ(best_events(), (std::vector<std::pair<double, double>>{{1.028, 0}, {1.5, 1.028}}));
  EXPECT_DOUBLE_EQ(*progress.Get().best_speedup, 1.5);
  store->reset();
  std::filesystem::remove_all(dir);
}

// ------------------------------------------------------- the real binary --

absl::StatusOr<std::unique_ptr<ChildProcess>> StartOrchestratorProcess(
    const std::string& dir, const std::string& executor) {
  return ChildProcess::Start({PKFORGE_ORCH_BIN, "--listen", "127.0.0.1:0", "--db",
                              dir + "/traj.db", "--heartbeat-interval", "0.2",
                              "--health-interval", "0.2", "--executor", executor},
                             20, dir + "/orchestrator.log");
}

absl::StatusOr<std::unique_ptr<ChildProcess>> StartFakeExecutorProcess(
    const std::string& listen, int delay_ms) {
  return ChildProcess::Start({PKFORGE_FAKE_EXECUTOR_BIN, "--listen", listen, "--delay-ms",
                              std::to_string(delay_ms)});
}

// Items 4, 5 and 7 around an orchestrator SIGKILL:
// - the resumed attempt is charged the time since the job started (it read
//   the last event's elapsed_ms, losing the time until the crash);
// - evaluations cut off by the kill get an evaluation_aborted end event;
// - with its executor down too, the resumed job waits for it (it failed
//   3 ms after the restart: "no healthy executor can run ...");
// - best_improved after the restart only when it beats the earlier best.
TEST_F(FaultsTest, OrchestratorKillChargesDowntimeClosesEvaluationsAndWaitsForExecutor) {
  auto exec = StartFakeExecutorProcess("127.0.0.1:0", 3000);
  ASSERT_TRUE(exec.ok()) << exec.status();
  const std::string exec_address = (*exec)->address();
  auto orch = StartOrchestratorProcess(dir_, exec_address);
  ASSERT_TRUE(orch.ok()) << orch.status();
  auto stub = testing::Client((*orch)->address());
  v1::JobSpec spec = testing::SearchSpec(40, 120);
  // Rung 0 times at the job's own setting, so its results are comparable and
  // make best_improved events (later rungs time with more iterations).
  spec.mutable_eval()->set_timed_iters(10);
  auto job = Submit(stub.get(), spec);
  ASSERT_TRUE(job.ok()) << job.status();
  // After the first improvement the next round of evaluations starts at
  // once and runs 3 s without events: the kill falls into that silence.
  auto first = Follow(stub.get(), job->id(), 0,
                      [](const v1::Event& e) { return e.has_best_improved(); }, 30);
  ASSERT_TRUE(first.matched);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const int64_t kill_wall_us = NowWallUs();
  (*orch)->Kill(SIGKILL);
  (*orch)->Wait();
  (*exec)->Kill(SIGKILL);
  (*exec)->Wait();

  auto again = StartOrchestratorProcess(dir_, exec_address);
  ASSERT_TRUE(again.ok()) << again.status();
  stub = testing::Client((*again)->address());
  auto before = AllEvents(stub.get(), job->id());
  ASSERT_FALSE(before.empty());
  const int64_t last_event_wall_us = [&] {
    int64_t w = 0;
    for (const auto& e : before) {
      if (e.wall_us() <= kill_wall_us) w = std::max(w, e.wall_us());
    }
    return w;
  }();
  // The premise of the elapsed check: nothing was recorded in the last
  // ~second before the kill.
  ASSERT_GT(kill_wall_us - last_event_wall_us, 500'000);

  // The executor is down: the resumed job waits, saying why.
  auto waiting = Follow(stub.get(), job->id(), 0, IsWaiting, 20);
  ASSERT_TRUE(waiting.matched) << "no waiting_for_executor; last: "
                               << (waiting.events.empty() ? ""
                                                          : waiting.events.back().DebugString());
  auto mid = GetJob(stub.get(), job->id());
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(mid->state(), v1::JOB_STATE_RUNNING) << mid->error();
  auto exec2 = StartFakeExecutorProcess(exec_address, 5);
  ASSERT_TRUE(exec2.ok()) << exec2.status();
  auto done = testing::WaitForEnd(stub.get(), job->id(), 60);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->error();

  const std::vector<v1::Event> all = AllEvents(stub.get(), job->id());
  // Item 5: the second attempt starts at the time since the job started.
  const v1::Event* attempt2 = nullptr;
  for (const auto& e : all) {
    if (e.has_state_changed() &&
        e.state_changed().reason().find("attempt 2") != std::string::npos) {
      attempt2 = &e;
    }
  }
  ASSERT_NE(attempt2, nullptr);
  EXPECT_GE(attempt2->elapsed_ms(), (kill_wall_us - done->started_wall_us()) / 1000)
      << "the time between the last event and the kill was not charged";
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_GE(all[i].elapsed_ms(), all[i - 1].elapsed_ms()) << "seq " << all[i].seq();
  }
  // Item 7: every evaluation that started has an end; the cut-off ones say why.
  std::set<std::string> open;
  int aborted = 0;
  for (const auto& e : all) {
    if (e.has_evaluation_started()) open.insert(e.evaluation_started().evaluation_id());
    if (e.has_evaluation_finished()) open.erase(e.evaluation_finished().evaluation_id());
    if (e.has_evaluation_aborted()) {
      ++aborted;
      EXPECT_EQ(open.erase(e.evaluation_aborted().evaluation_id()), 1u);
      EXPECT_THAT(e.evaluation_aborted().reason(), HasSubstr("orchestrator stopped"));
      EXPECT_LT(e.seq(), attempt2->seq());
    }
  }
  EXPECT_TRUE(open.empty()) << open.size() << " evaluation(s) without an end event";
  EXPECT_GT(aborted, 0);
  // Item 5: improvements stay improvements across the restart.
  ExpectBestImprovedMonotone(all);
  (*again)->Kill(SIGTERM);
  EXPECT_EQ((*again)->Wait(), 0);
}

// Item 7: a job that fails says why in its final state event.
TEST_F(FaultsTest, FailedJobsFinalEventCarriesTheReason) {
  testing::FakeExecutorOptions o;
  o.delay_ms = 5;
  o.refuse_evaluations = "sandbox unavailable on this executor";
  auto exec = FakeExecutor::Start(o);
  ASSERT_TRUE(exec.ok()) << exec.status();
  Start(Config((*exec)->address()));
  auto job = Submit(stub_.get(), testing::SearchSpec(4, 60));
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 30);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->state(), v1::JOB_STATE_FAILED);
  auto all = AllEvents(stub_.get(), job->id());
  ASSERT_FALSE(all.empty());
  EXPECT_THAT(all.back().state_changed().reason(), HasSubstr("sandbox unavailable"));
  EXPECT_NE(all.back().state_changed().reason(), "failed");
}


// API fuzzing (session 16): an executor at its max_in_flight answers
// RESOURCE_EXHAUSTED; the orchestrator took that as the evaluation's end
// ("no result"), and the job ended SUCCEEDED with 0 evaluations. Busy is
// back-pressure: the evaluation waits and goes out again.
TEST_F(FaultsTest, ABusyExecutorMakesEvaluationsWaitNotDisappear) {
  testing::FakeExecutorOptions o;
  o.delay_ms = 5;
  o.busy_first = 3;
  auto exec = FakeExecutor::Start(o);
  ASSERT_TRUE(exec.ok()) << exec.status();
  Start(Config((*exec)->address()));
  v1::JobSpec s = testing::SearchSpec(0, 60);
  s.mutable_budget()->set_max_evaluations(0);
  s.mutable_agent()->set_kind(v1::AGENT_KIND_REPLAY);
  for (int i = 0; i < 2; ++i) {
    auto* src = s.mutable_agent()->add_replay_sources();
    src->set_name("k" + std::to_string(i) + ".cc");
    src->set_source("// candidate " + std::to_string(i) + "\n");
  }
  auto job = Submit(stub_.get(), s);
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 30);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->stop_reason();
  EXPECT_EQ(done->evaluations(), 2);
  EXPECT_EQ((*exec)->busy_answers(), 3);
  for (const v1::Event& e : AllEvents(stub_.get(), job->id())) {
    if (e.has_evaluation_finished()) {
      EXPECT_THAT(e.evaluation_finished().message(), Not(HasSubstr("no result")));
    }
  }
}

// API fuzzing (session 16): a cancel that came while a replay job's last
// candidate was being evaluated ended the job SUCCEEDED ("nothing left to
// try"): the replay agent finished as exhausted. A cancel that arrived
// before the job ended always wins.
TEST_F(FaultsTest, ACancelDuringTheLastEvaluationEndsTheJobCancelled) {
  auto exec = FakeExecutor::Start({.delay_ms = 5});
  ASSERT_TRUE(exec.ok()) << exec.status();
  Start(Config((*exec)->address()));
  v1::JobSpec s = testing::SearchSpec(0, 60);
  s.mutable_budget()->set_max_evaluations(0);
  s.mutable_agent()->set_kind(v1::AGENT_KIND_REPLAY);
  auto* src = s.mutable_agent()->add_replay_sources();
  src->set_name("held.cc");
  src->set_source("// FAKE_HOLD: runs until released or cancelled\n");
  auto job = Submit(stub_.get(), s);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(Follow(stub_.get(), job->id(), 0,
                     [](const v1::Event& e) { return e.has_evaluation_started(); }, 20)
                  .matched);
  auto cancelled = CancelJob(stub_.get(), job->id(), "stop now");
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 30);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_CANCELLED) << done->stop_reason();
  EXPECT_EQ(done->stop_reason(), "cancelled: stop now");
}
}  // namespace
}  // namespace pkforge::orchestrator
