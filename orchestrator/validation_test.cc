// The orchestrator's API contract for hostile or careless clients (issue 15,
// items 8, 9, 11): specs are checked with the executor's own rules, a job
// whose every evaluation is refused fails with the refusal, no client string
// is echoed in full, every request field is bounded and named, and
// ListProblems honours its request. A real gRPC server and SQLite file, fake
// executors over real sockets.
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/harness/problem.h"
#include "kernels/harness/problem_info.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/testing/fake_executor.h"
#include "orchestrator/testing/test_util.h"

namespace pkforge::orchestrator {
namespace {

using ::testing::HasSubstr;
using testing::FakeExecutor;
using testing::FakeExecutorOptions;

int64_t CountJobs(const std::string& db) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(h, "SELECT COUNT(*) FROM jobs", -1, &st, nullptr);
  int64_t n = -1;
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return n;
}

absl::Status FromGrpc(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

class ValidationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("orch_validation_test");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    orch_.reset();
    executor_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Start(FakeExecutorOptions fo = {}) {
    fo.delay_ms = 2;
    auto f = FakeExecutor::Start(fo);
    ASSERT_TRUE(f.ok()) << f.status();
    executor_ = std::move(*f);
    OrchestratorConfig c;
    c.listen = "127.0.0.1:0";
    c.db = db();
    c.executors.push_back(ExecutorEndpoint{.address = executor_->address()});
    c.heartbeat_interval_s = 0.2;
    c.health_interval_s = 0.3;
    auto o = Orchestrator::Start(c);
    ASSERT_TRUE(o.ok()) << o.status();
    orch_ = std::move(*o);
    stub_ = testing::Client(orch_->address());
  }

  absl::StatusOr<v1::Job> Submit(const v1::JobSpec& spec) {
    grpc::ClientContext ctx;
    v1::SubmitJobRequest req;
    *req.mutable_spec() = spec;
    v1::Job job;
    grpc::Status s = stub_->SubmitJob(&ctx, req, &job);
    if (!s.ok()) return FromGrpc(s);
    return job;
  }

  std::string db() const { return dir_ + "/traj.db"; }

  std::string dir_;
  std::unique_ptr<FakeExecutor> executor_;
  std::unique_ptr<Orchestrator> orch_;
  std::unique_ptr<v1::Orchestrator::Stub> stub_;
};

struct SpecCase {
  std::string name;
  std::function<void(v1::JobSpec&)> mutate;
  std::string field;
};

void ExpectRefused(const absl::StatusOr<v1::Job>& r, const std::string& name,
                   const std::string& field) {
  ASSERT_FALSE(r.ok()) << name << " was accepted";
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << name << ": " << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(field)) << name;
}

// Item 8: each of these was accepted and the job then "succeeded" with no
// evaluation (the executor refused every one).
TEST_F(ValidationTest, SubmitRefusesWhatTheExecutorWouldRefuseNamingTheField) {
  Start();
  const std::vector<SpecCase> cases = {
      {"sanitize 99",
       [](v1::JobSpec& s) { s.mutable_eval()->set_sanitize(static_cast<v1::SanitizerTool>(99)); },
       "spec.eval.sanitize"},
      {"timeout 1e308", [](v1::JobSpec& s) { s.mutable_eval()->set_timeout_s(1e308); },
       "spec.eval.timeout_s"},
      {"warmup 2^31-1", [](v1::JobSpec& s) { s.mutable_eval()->set_warmup_iters(2147483647); },
       "spec.eval.warmup_iters"},
      {"dims 2^40",
       [](v1::JobSpec& s) {
         auto* v = s.mutable_size()->mutable_dims()->mutable_values();
         (*v)["M"] = int64_t{1} << 40;
         (*v)["N"] = int64_t{1} << 40;
       },
       "spec.size.dims"},
      {"wall 1e13", [](v1::JobSpec& s) { s.mutable_budget()->set_wall_seconds(1e13); },
       "spec.budget.wall_seconds"},
      {"world above the problem's",
       [](v1::JobSpec& s) { s.set_world_size(9); },  // the fake lists 1..64, allreduce is 1..8
       "spec.world_size"},
      {"dtype 99", [](v1::JobSpec& s) { s.set_dtype(static_cast<v1::Dtype>(99)); },
       "spec.dtype"},
  };
  for (const auto& c : cases) {
    v1::JobSpec spec = testing::SearchSpec();
    c.mutate(spec);
    ExpectRefused(Submit(spec), c.name, c.field);
  }
  EXPECT_EQ(CountJobs(db()), 0);
}

// The fake executor's log lines (shapes_log_file) of one job's evaluations.
std::vector<std::string> LinesOfJob(const std::string& log, const std::string& job_id) {
  std::vector<std::string> out;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(job_id + " ", 0) == 0) out.push_back(line);
  return out;
}

// Issue #17 item 5: the job spec's hidden shapes and size ladder reach the
// executor: final_hidden_shapes only on the final re-measurement,
// hidden_shapes on every evaluation, the ladder on every evaluation; bad
// values are refused at submission naming the field.
TEST_F(ValidationTest, HiddenShapesAndSizeLadderFlowFromTheJobSpecToTheExecutor) {
  const std::string log = dir_ + "/shapes.log";
  Start({.shapes_log_file = log});
  auto lines_of = [&](const std::string& job_id) { return LinesOfJob(log, job_id); };
  v1::JobSpec spec = testing::SearchSpec(2, 60);
  spec.mutable_eval()->set_final_hidden_shapes(true);
  spec.mutable_eval()->add_size_ladder("tiny");
  spec.mutable_eval()->add_size_ladder("default");
  auto job = Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 60);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_TRUE(done->has_final_speedup()) << done->DebugString();
  const auto lines = lines_of(job->id());
  ASSERT_GE(lines.size(), 2u) << ::testing::PrintToString(lines);  // search + the final
  int finals = 0;
  for (const auto& l : lines) {
    const bool final = l.find("final measurement") != std::string::npos;
    finals += final;
    EXPECT_NE(l.find(final ? "\thidden=1" : "\thidden=0"), std::string::npos) << l;
    EXPECT_NE(l.find("\tsizes=tiny,default"), std::string::npos) << l;
  }
  EXPECT_EQ(finals, 1);

  v1::JobSpec all = testing::SearchSpec(1, 60);
  all.mutable_eval()->set_hidden_shapes(true);
  auto job2 = Submit(all);
  ASSERT_TRUE(job2.ok()) << job2.status();
  ASSERT_TRUE(testing::WaitForEnd(stub_.get(), job2->id(), 60).ok());
  for (const auto& l : lines_of(job2->id())) EXPECT_NE(l.find("\thidden=1"), std::string::npos) << l;
  EXPECT_GE(lines_of(job2->id()).size(), 2u);

  const std::vector<SpecCase> cases = {
      {"ladder huge", [](v1::JobSpec& s) { s.mutable_eval()->add_size_ladder("huge"); },
       "spec.eval.size_ladder[0]: 'huge'"},
      {"ladder twice",
       [](v1::JobSpec& s) {
         s.mutable_eval()->add_size_ladder("tiny");
         s.mutable_eval()->add_size_ladder("tiny");
       },
       "spec.eval.size_ladder[1]"},
      {"final hidden without a family",
       [](v1::JobSpec& s) {
         auto* v = s.mutable_size()->mutable_dims()->mutable_values();
         (*v)["M"] = 1;
         (*v)["N"] = 1;
         s.mutable_eval()->set_final_hidden_shapes(true);
       },
       "spec.eval.hidden_shapes"},
  };
  for (const auto& c : cases) {
    v1::JobSpec s = testing::SearchSpec();
    c.mutate(s);
    ExpectRefused(Submit(s), c.name, c.field);
  }
}

// Measurement-grade timing: final_precise_timing reaches only the final
// re-measurement, precise_timing every evaluation; on a host job either is
// refused at submission naming the field (FAILED_PRECONDITION, as profile).
TEST_F(ValidationTest, PreciseTimingFlowsFromTheJobSpecToTheExecutor) {
  const std::string log = dir_ + "/precise.log";
  Start({.shapes_log_file = log});
  auto lines_of = [&](const std::string& job_id) { return LinesOfJob(log, job_id); };
  v1::JobSpec spec = testing::SearchSpec(2, 60);
  spec.set_backend(v1::BACKEND_CUDA);
  spec.mutable_eval()->set_final_precise_timing(true);
  auto job = Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 60);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_TRUE(done->has_final_speedup()) << done->DebugString();
  const auto lines = lines_of(job->id());
  ASSERT_GE(lines.size(), 2u) << ::testing::PrintToString(lines);
  int finals = 0;
  for (const auto& l : lines) {
    const bool final = l.find("final measurement") != std::string::npos;
    finals += final;
    EXPECT_NE(l.find(final ? "\tprecise=1" : "\tprecise=0"), std::string::npos) << l;
  }
  EXPECT_EQ(finals, 1);

  v1::JobSpec all = testing::SearchSpec(1, 60);
  all.set_backend(v1::BACKEND_CUDA);
  all.mutable_eval()->set_precise_timing(true);
  auto job2 = Submit(all);
  ASSERT_TRUE(job2.ok()) << job2.status();
  ASSERT_TRUE(testing::WaitForEnd(stub_.get(), job2->id(), 60).ok());
  EXPECT_GE(lines_of(job2->id()).size(), 2u);
  for (const auto& l : lines_of(job2->id())) EXPECT_NE(l.find("\tprecise=1"), std::string::npos) << l;

  for (const bool final : {false, true}) {
    v1::JobSpec host = testing::SearchSpec();
    if (final) host.mutable_eval()->set_final_precise_timing(true);
    else host.mutable_eval()->set_precise_timing(true);
    // As profile and sanitize on the host: a precondition of the backend.
    auto r = Submit(host);
    ASSERT_FALSE(r.ok()) << final;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("spec.eval.precise_timing"));
  }
}

// Item 9 (orchestrator side): cuda sizes are bounded by the GPU memory the
// executor reports.
TEST_F(ValidationTest, CudaSizeBeyondTheExecutorsGpuMemoryIsRefusedAtSubmit) {
  FakeExecutorOptions fo;
  fo.gpu_memory_bytes = int64_t{1} << 30;
  Start(fo);
  v1::JobSpec spec = testing::SearchSpec();
  spec.set_backend(v1::BACKEND_CUDA);
  spec.mutable_size()->set_preset("large");
  auto r = Submit(spec);
  ExpectRefused(r, "large on 1 GiB GPUs", "spec.size");
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("GPU"));
  spec.mutable_size()->set_preset("tiny");
  auto ok = Submit(spec);
  EXPECT_TRUE(ok.ok()) << ok.status();
}

// Item 8: what only the executor can judge (its own limits) still ends the
// job as failed, with the executor's reason, instead of "succeeded".
TEST_F(ValidationTest, JobWhoseEveryEvaluationIsRefusedFailsWithTheReason) {
  FakeExecutorOptions fo;
  fo.refuse_evaluations = "size: needs at least 48.1 GiB of host memory";
  Start(fo);
  auto job = Submit(testing::SearchSpec(3));
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 60);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_FAILED) << done->stop_reason();
  EXPECT_EQ(done->evaluations(), 0);
  EXPECT_THAT(done->error(), HasSubstr("48.1 GiB of host memory"));
}

// Item 11: a 1 MB client string came back inside the error message, which
// then exceeded gRPC's metadata limit (RESOURCE_EXHAUSTED for the client).
TEST_F(ValidationTest, HugeClientStringsAreRefusedWithoutBeingEchoed) {
  Start();
  const std::string mb(1 << 20, 'x');
  const std::vector<SpecCase> cases = {
      {"size.preset", [&](v1::JobSpec& s) { s.mutable_size()->set_preset(mb); },
       "spec.size.preset"},
      {"search_algorithm", [&](v1::JobSpec& s) { s.mutable_agent()->set_search_algorithm(mb); },
       "spec.agent.search_algorithm"},
      {"problem", [&](v1::JobSpec& s) { s.set_problem(mb); }, "spec.problem"},
      {"dims name",
       [&](v1::JobSpec& s) { (*s.mutable_size()->mutable_dims()->mutable_values())[mb] = 4; },
       "spec.size.dims"},
      {"label", [&](v1::JobSpec& s) { s.set_label(mb); }, "spec.label"},
  };
  for (const auto& c : cases) {
    v1::JobSpec spec = testing::SearchSpec();
    c.mutate(spec);
    auto r = Submit(spec);
    ExpectRefused(r, c.name, c.field);
    EXPECT_LT(r.status().message().size(), 1024u) << c.name;
  }
  // base_url and replay_dir have their own rules (providers, replay root);
  // whatever they say, it names the field and fits in metadata.
  for (const auto& [name, field, mutate] :
       std::vector<std::tuple<std::string, std::string, std::function<void(v1::JobSpec&)>>>{
           {"base_url", "spec.agent",
            [&](v1::JobSpec& s) {
              s.mutable_agent()->set_kind(v1::AGENT_KIND_LLM);
              s.mutable_agent()->mutable_llm()->set_provider(v1::PROVIDER_OPENAI);
              s.mutable_agent()->mutable_llm()->set_model("m");
              s.mutable_agent()->mutable_llm()->set_base_url("http://" + mb);
            }},
           {"replay_dir", "spec.agent.replay_",
            [&](v1::JobSpec& s) { s = testing::ReplaySpec("/" + mb); }},
       }) {
    v1::JobSpec spec = testing::SearchSpec();
    mutate(spec);
    auto r = Submit(spec);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_NE(r.status().code(), absl::StatusCode::kResourceExhausted) << name << ": " << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(field)) << name;
    EXPECT_LT(r.status().message().size(), 1100u) << name;
  }
  EXPECT_EQ(CountJobs(db()), 0);
}

// Item 11: four 1 MB reasons made every later ListJobs exceed the client's
// default message size; the reason is now bounded.
TEST_F(ValidationTest, CancelReasonIsBounded) {
  Start();
  auto job = Submit(testing::SearchSpec(1000, 120));
  ASSERT_TRUE(job.ok()) << job.status();
  grpc::ClientContext ctx;
  v1::CancelJobRequest req;
  req.set_job_id(job->id());
  req.set_reason(std::string(1 << 20, 'r'));
  v1::Job out;
  absl::Status s = FromGrpc(stub_->CancelJob(&ctx, req, &out));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("reason"));
  grpc::ClientContext ctx2;
  req.set_reason("enough");
  EXPECT_TRUE(stub_->CancelJob(&ctx2, req, &out).ok());
  auto done = testing::WaitForEnd(stub_.get(), job->id(), 30);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_CANCELLED);
}

// Item 11: grid_points=1,000,000 grew the process by ~900 MB; axis=7,
// window_s=-5 and grid_points=-1 were accepted.
TEST_F(ValidationTest, AnalyzePlateauBoundsAndNamesEveryField) {
  Start();
  const std::vector<std::pair<std::string, std::function<void(v1::AnalyzePlateauRequest&)>>>
      cases = {
          {"grid_points", [](auto& r) { r.set_grid_points(1'000'000); }},
          {"grid_points", [](auto& r) { r.set_grid_points(-1); }},
          {"axis", [](auto& r) { r.set_axis(static_cast<v1::TimeAxis>(7)); }},
          {"window_s", [](auto& r) { r.set_window_s(-5); }},
          {"epsilon", [](auto& r) { r.set_epsilon(std::nan("")); }},
          {"fast_p", [](auto& r) {
             for (int i = 0; i < 100000; ++i) r.add_fast_p(i);
           }},
          {"jobs.label", [](auto& r) { r.mutable_jobs()->set_label(std::string(1 << 20, 'l')); }},
          // API fuzzing, session 16: 10,000 copies of one id were each loaded
          // before the duplicate was refused (0.2-0.9 s a request); the ids
          // name no job here, so before the fix the answer was NOT_FOUND.
          {"jobs.job_ids", [](auto& r) {
             for (int i = 0; i < 2; ++i) r.mutable_jobs()->add_job_ids("job_01HZZZZZZZZZZZZZZZZZZZZZZZ");
           }},
          {"jobs.job_ids", [](auto& r) {
             for (int i = 0; i < 10001; ++i)
               r.mutable_jobs()->add_job_ids(fmt::format("job_01HZZZZZZZZZZZZZZZZZ{:05d}", i));
           }},
      };
  for (const auto& [field, mutate] : cases) {
    v1::AnalyzePlateauRequest req;
    mutate(req);
    grpc::ClientContext ctx;
    v1::PlateauReport report;
    absl::Status s = FromGrpc(stub_->AnalyzePlateau(&ctx, req, &report));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << field << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(field));
  }
}

TEST_F(ValidationTest, ListJobsRefusesAnUnknownState) {
  Start();
  grpc::ClientContext ctx;
  v1::ListJobsRequest req;
  req.set_state(static_cast<v1::JobState>(99));
  v1::ListJobsResponse resp;
  absl::Status s = FromGrpc(stub_->ListJobs(&ctx, req, &resp));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("state"));
}

// Item 11: the orchestrator's ListProblems ignored world_size, dtype, size
// and include_reference_source; it now answers as the executor's does.
TEST_F(ValidationTest, ListProblemsHonoursItsRequest) {
  Start();
  auto list = [&](const v1::ListProblemsRequest& req) {
    grpc::ClientContext ctx;
    v1::ListProblemsResponse resp;
    grpc::Status s = stub_->ListProblems(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  };
  auto find = [](const v1::ListProblemsResponse& r, const std::string& name) {
    for (const auto& p : r.problems())
      if (p.name() == name) return p;
    ADD_FAILURE() << name << " not listed";
    return v1::ProblemInfo();
  };
  v1::ListProblemsRequest plain;
  v1::ProblemInfo bare = find(list(plain), "allreduce");
  EXPECT_TRUE(bare.reference_source().empty());
  EXPECT_EQ(bare.inputs_size(), 0);

  v1::ListProblemsRequest full;
  full.set_world_size(2);
  full.set_dtype(v1::DTYPE_F32);
  full.mutable_size()->set_preset("tiny");
  full.set_include_reference_source(true);
  v1::ProblemInfo got = find(list(full), "allreduce");
  auto want = kernels::DescribeProblem(**kernels::FindProblem("allreduce"), full);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_FALSE(got.reference_source().empty());
  EXPECT_EQ(got.reference_source(), want->reference_source());
  ASSERT_EQ(got.inputs_size(), want->inputs_size());
  ASSERT_GT(got.inputs_size(), 0);
  EXPECT_EQ(got.inputs(0).SerializeAsString(), want->inputs(0).SerializeAsString());
  EXPECT_EQ(got.outputs_size(), want->outputs_size());

  v1::ListProblemsRequest bad;
  bad.set_world_size(-1);
  grpc::ClientContext ctx;
  v1::ListProblemsResponse resp;
  EXPECT_EQ(stub_->ListProblems(&ctx, bad, &resp).error_code(), grpc::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace pkforge::orchestrator
