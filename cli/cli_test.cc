// End-to-end tests of the `pkforge` binary: real processes, a real SQLite file
// written through the store, exit codes and outputs as a user sees them.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/testing/cli_test_util.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/store.h"

namespace pkforge::cli {
namespace {

namespace fs = std::filesystem;

struct CmdResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

CmdResult Pkforge(const std::string& args) {
  test_util::Cmd c = test_util::Shell(std::string(PKFORGE_BIN) + " " + args + " 2>&1");
  return {c.rc, c.out};
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pkf_cli_test." + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "t.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Two finished jobs: A improves 1.0 -> 1.5 by 20 s then stalls until 100 s;
  // B is never correct.
  void Populate() {
    auto store = storage::TrajectoryStore::Open(db_);
    ASSERT_TRUE(store.ok()) << store.status();
    const int64_t t0 = 1'800'000'000'000'000;
    for (int j = 0; j < 2; ++j) {
      storage::JobRecord job;
      job.id = NewId("job", t0 + j * 1000);  // distinct ms: ids sort in creation order
      job.spec_json = "{}";
      job.problem = "allreduce";
      job.backend = "host";
      job.dtype = "f32";
      job.agent_kind = "search";
      job.strategy = "sequential";
      job.model = j == 0 ? "model-a" : "model-b";
      job.created_wall_us = t0;
      ASSERT_TRUE((*store)->CreateJob(job).ok());
      ASSERT_TRUE((*store)->UpdateJobState(job.id, storage::JobState::kRunning, "", t0).ok());
      job_ids_.push_back(job.id);
      const double speedups[] = {1.0, 1.5, 1.505};
      const int64_t at_s[] = {10, 20, 30};
      for (int i = 0; i < 3; ++i) {
        storage::CandidateRecord c;
        c.source = "int pkf_run(){return " + std::to_string(j * 10 + i) + ";}";
        c.sha256 = Sha256Hex(c.source);
        c.backend = "host";
        c.first_seen_wall_us = t0;
        ASSERT_TRUE((*store)->PutCandidate(c).ok());
        storage::EvaluationRecord e;
        e.id = NewId("eval");
        e.job_id = job.id;
        e.candidate_sha256 = c.sha256;
        e.correct = j == 0;
        e.status = e.correct ? "OK" : "WRONG_OUTPUT";
        if (e.correct) e.speedup = speedups[i];
        // Job A's best beats the measured ceiling (a host timing artefact).
        if (e.correct && i == 2) e.roofline_fraction = 1.497;
        e.result_json = "{}";
        e.executor = "local";
        e.queue_ms = 1000;
        e.elapsed_ms = at_s[i] * 1000;
        e.wall_us = t0 + e.elapsed_ms * 1000;
        ASSERT_TRUE((*store)->AddEvaluation(e).ok()) << (*store)->AddEvaluation(e);
      }
      ASSERT_TRUE((*store)
                      ->UpdateJobState(job.id, storage::JobState::kSucceeded, "", t0 + 100'000'000)
                      .ok());
    }
  }

  fs::path dir_;
  std::string db_;
  std::vector<std::string> job_ids_;
};

// `pkforge local` end to end on the host backend with the search agent: real
// pkforge-executor and pkforge-orchestrator children, a real job, the result
// as JSON on stdout (progress on stderr, dropped here), children gone after.
TEST_F(CliTest, LocalRunsASearchJobEndToEndAndStopsItsChildren) {
  const std::string data = (dir_ / "data").string();
  const std::string json_out = (dir_ / "local.json").string();
  CmdResult r = Pkforge("local --backend host --problem allreduce --world-size 2 --size tiny "
                        "--budget 120s --max-evaluations 6 --data-dir " + data + " --json > " +
                        json_out + " 2>/dev/null; echo rc=$?");
  ASSERT_NE(r.out.find("rc=0"), std::string::npos) << r.out;
  std::ifstream in(json_out);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["job"]["state"], "JOB_STATE_SUCCEEDED") << j.dump();
  EXPECT_GE(j["job"]["evaluations"].get<int>(), 1) << j.dump();
  // Default settings (timed_iters 0: the executor's default). Rung 0 of the
  // search (3 configurations) screens with fewer iterations and is kept
  // apart; its last rung runs at the job's own settings, so the job has a
  // best during the search (#18 item 5), and its result is the final
  // re-measurement.
  EXPECT_EQ(j["job"]["other_settings_evaluations"].get<int>(), 3) << j.dump();
  EXPECT_EQ(j["job"]["evaluations"].get<int>(), 4) << j.dump();
  ASSERT_TRUE(j["job"].contains("best_speedup")) << j.dump();
  EXPECT_GT(j["job"]["best_speedup"].get<double>(), 0);
  ASSERT_EQ(j["plateau"]["jobs"].size(), 1u) << j.dump();
  EXPECT_TRUE(j["plateau"]["jobs"][0].contains("final_best")) << j.dump();
  ASSERT_TRUE(j["job"].contains("final_speedup")) << j.dump();
  EXPECT_GT(j["job"]["final_speedup"].get<double>(), 0);
  const std::string best = j["best_source"];
  ASSERT_FALSE(best.empty());
  std::ifstream src(best);
  std::string text((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("pkf_run"), std::string::npos);
  EXPECT_EQ(j["plateau"]["jobs"].size(), 1u);
  // The best candidate was evaluated once more before the result was printed.
  EXPECT_EQ(j["remeasured"]["status"], "OK") << j.dump();
  EXPECT_GT(j["remeasured"]["speedup"].get<double>(), 0) << j.dump();
  // Everything is in the database, and the daemons are gone.
  auto store = storage::TrajectoryStore::Open((fs::path(data) / "pkforge.db").string());
  ASSERT_TRUE(store.ok());
  auto evals = (*store)->ListEvaluations(j["job"]["id"].get<std::string>());
  ASSERT_TRUE(evals.ok());
  // The search's evaluations and the final re-measurement (not counted in
  // the job's evaluations).
  EXPECT_EQ(static_cast<int>(evals->size()), j["job"]["evaluations"].get<int>() + 1);
  EXPECT_EQ(evals->back().role, storage::kRoleFinal);
  EXPECT_EQ(evals->back().id, j["job"]["final_evaluation_id"].get<std::string>());
  // The comparable one is the job's best and re-measured: the same candidate
  // at the same settings (0 = the executor's default) as the final one.
  int comparable = 0;
  for (const auto& e : *evals) {
    if (e.role != storage::kRoleSearch || !e.comparable) continue;
    ++comparable;
    EXPECT_EQ(e.timed_iters, 0);
    EXPECT_EQ(e.candidate_sha256, j["job"]["best_candidate_sha256"].get<std::string>());
  }
  EXPECT_EQ(comparable, 1);
  EXPECT_EQ(evals->back().timed_iters, 0);
  EXPECT_EQ(j["job"]["final_candidate_sha256"], j["job"]["best_candidate_sha256"]) << j.dump();
  // The stored trajectory has a best-so-far curve of that evaluation.
  CmdResult show = Pkforge("show " + j["job"]["id"].get<std::string>() + " --db " + data +
                           "/pkforge.db --json 2>/dev/null");
  ASSERT_EQ(show.code, 0) << show.out;
  auto shown = nlohmann::json::parse(show.out);
  ASSERT_EQ(shown["best_curve"].size(), 1u) << shown.dump();
  EXPECT_DOUBLE_EQ(shown["best_curve"][0]["best_speedup"].get<double>(),
                   j["job"]["best_speedup"].get<double>());
  CmdResult ps = Pkforge("version >/dev/null; pgrep -f 'pkforge-(executor|orchestrator).*" + data +
                         "' || echo none");
  EXPECT_NE(ps.out.find("none"), std::string::npos) << ps.out;
}

// The human-readable result: every line the README promises, and a plateau
// line that always says something definite.
TEST_F(CliTest, LocalPrintsAReadableResult) {
  const std::string data = (dir_ / "data-text").string();
  CmdResult r = Pkforge("local --backend host --problem allreduce --world-size 2 --size tiny "
                        "--budget 120s --max-evaluations 3 --data-dir " + data +
                        " 2>/dev/null; echo rc=$?");
  ASSERT_NE(r.out.find("rc=0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("== result of job"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best speedup"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of the roofline"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best source " + data), std::string::npos) << r.out;
  const size_t at = r.out.find("  plateau: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_TRUE(line.find("no further gain") != std::string::npos ||
              line.find("no plateau detected") != std::string::npos)
      << line;
  EXPECT_NE(line.back(), ' ') << line;
}

// Issue #18 item 5 in every text output of a stored job: a rung at other
// settings (10.2x at 10 timed iterations) is labelled and kept out of BEST
// and the plateau figures; the final re-measurement is the job's FINAL.
TEST_F(CliTest, RungsAndTheFinalMeasurementAreLabelledInTextOutput) {
  std::string id;
  {
    auto store = storage::TrajectoryStore::Open(db_);
    ASSERT_TRUE(store.ok()) << store.status();
    const int64_t t0 = 1'800'000'000'000'000;
    storage::JobRecord job;
    job.id = id = NewId("job");
    job.spec_json = "{}";
    job.problem = "allreduce";
    job.backend = "host";
    job.dtype = "f32";
    job.agent_kind = "search";
    job.strategy = "successive_halving";
    job.created_wall_us = t0;
    ASSERT_TRUE((*store)->CreateJob(job).ok());
    ASSERT_TRUE((*store)->UpdateJobState(id, storage::JobState::kRunning, "", t0).ok());
    auto add = [&](const std::string& src, double speedup, int64_t at_s, bool comparable,
                   const char* role) {
      storage::CandidateRecord c{Sha256Hex(src), src, "host", t0};
      ASSERT_TRUE((*store)->PutCandidate(c).ok());
      storage::EvaluationRecord e;
      e.id = NewId("eval");
      e.job_id = id;
      e.candidate_sha256 = c.sha256;
      e.status = "OK";
      e.correct = true;
      e.speedup = speedup;
      e.result_json = "{}";
      e.elapsed_ms = at_s * 1000;
      e.wall_us = t0 + e.elapsed_ms * 1000;
      e.timed_iters = comparable ? 0 : 10;
      e.comparable = comparable;
      e.role = role;
      ASSERT_TRUE((*store)->AddEvaluation(e).ok());
    };
    add("int pkf_run(){return 1;}", 10.2, 10, false, storage::kRoleSearch);
    add("int pkf_run(){return 2;}", 2.7, 20, true, storage::kRoleSearch);
    add("int pkf_run(){return 2;}", 2.5, 30, true, storage::kRoleFinal);
    ASSERT_TRUE((*store)->UpdateJobState(id, storage::JobState::kSucceeded, "", t0 + 40'000'000).ok());
  }
  CmdResult t = Pkforge("trajectory " + id + " --db " + db_);
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("other:10it"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find(" final"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("10.200         -"), std::string::npos) << "a rung made BEST: " << t.out;
  EXPECT_EQ(t.out.find("10.200", t.out.find("10.200") + 1), std::string::npos)
      << "a rung made BEST: " << t.out;
  EXPECT_NE(t.out.find("not comparable, not in BEST"), std::string::npos) << t.out;
  CmdResult csv = Pkforge("trajectory " + id + " --db " + db_ + " --format csv");
  EXPECT_NE(csv.out.find(",10,other_settings\n"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find(",final\n"), std::string::npos) << csv.out;
  CmdResult jobs = Pkforge("jobs --db " + db_ + " --json");
  auto j = nlohmann::json::parse(jobs.out);
  ASSERT_EQ(j.size(), 1u) << jobs.out;
  EXPECT_DOUBLE_EQ(j[0]["best_speedup"].get<double>(), 2.7);
  EXPECT_DOUBLE_EQ(j[0]["final_speedup"].get<double>(), 2.5);
  CmdResult plateau = Pkforge("plateau --db " + db_ + " --job " + id);
  ASSERT_EQ(plateau.code, 0) << plateau.out;
  EXPECT_NE(plateau.out.find("1 evaluation(s) at other settings (search rungs, best 10.200)"),
            std::string::npos) << plateau.out;
  CmdResult show = Pkforge("show " + id + " --db " + db_);
  EXPECT_NE(show.out.find("result     2.500x"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("best       2.700x"), std::string::npos) << show.out;
}

TEST_F(CliTest, JobsListsFromDatabaseFile) {
  Populate();
  CmdResult r = Pkforge("jobs --db " + db_ + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["state"], "succeeded");
  EXPECT_DOUBLE_EQ(j[0]["best_speedup"].get<double>(), 1.505);
  EXPECT_TRUE(j[1]["best_speedup"].is_null());
  CmdResult table = Pkforge("jobs --db " + db_ + " --model model-a");
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_NE(table.out.find("1 job(s)"), std::string::npos) << table.out;
}

TEST_F(CliTest, TrajectoryCsvHasOneRowPerEvaluation) {
  Populate();
  CmdResult r = Pkforge("trajectory " + job_ids_[0] + " --db " + db_ + " --format csv");
  ASSERT_EQ(r.code, 0) << r.out;
  std::istringstream in(r.out);
  std::string line;
  int rows = 0;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("evaluation_id,elapsed_s,active_s,status", 0), 0u) << line;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, 3);
  EXPECT_NE(r.out.find(",1.5,1.5,"), std::string::npos) << r.out;  // speedup and best
}

TEST_F(CliTest, PlateauReportJsonSvgAndCsv) {
  Populate();
  std::string svg = (dir_ / "p.svg").string();
  std::string csv = (dir_ / "p.csv").string();
  CmdResult r = Pkforge("plateau --db " + db_ + " --json --group-by model --budgets 15,50 --svg " +
                        svg + " --csv " + csv);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["jobs"].size(), 2u);
  // Job A: steps at 10 (1.0), 20 (1.5), 30 (1.505 < 1.5*1.01); plateau from 20.
  const auto& a = j["jobs"][0]["job_id"] == job_ids_[0] ? j["jobs"][0] : j["jobs"][1];
  EXPECT_DOUBLE_EQ(a["plateau_onset_s"].get<double>(), 20.0) << a.dump();
  EXPECT_DOUBLE_EQ(a["first_correct_s"].get<double>(), 10.0);
  EXPECT_EQ(j["groups"].size(), 2u);
  std::ifstream svg_in(svg);
  std::stringstream ss;
  ss << svg_in.rdbuf();
  EXPECT_NE(ss.str().find("<svg"), std::string::npos);
  EXPECT_TRUE(fs::exists(csv));
  CmdResult table = Pkforge("plateau --db " + db_ + " --budgets 15");
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_NE(table.out.find("budget 15.0s: 1/2 correct"), std::string::npos) << table.out;
}

TEST_F(CliTest, BadInputGetsClearErrorsAndExitCodes) {
  Populate();
  // Without --db the analysis commands ask the orchestrator; none listens on
  // port 1, which is "unavailable" (exit 4) with a hint, not a crash.
  CmdResult no_db = Pkforge("plateau --orchestrator 127.0.0.1:1");
  EXPECT_EQ(no_db.code, 4) << no_db.out;
  EXPECT_NE(no_db.out.find("is pkforge-orchestrator running?"), std::string::npos) << no_db.out;
  CmdResult missing = Pkforge("jobs --db " + (dir_ / "nope.db").string());
  EXPECT_EQ(missing.code, 3) << missing.out;
  EXPECT_FALSE(fs::exists(dir_ / "nope.db"));  // a read command creates nothing
  CmdResult unknown = Pkforge("trajectory " + NewId("job") + " --db " + db_);
  EXPECT_EQ(unknown.code, 3) << unknown.out;
  CmdResult malformed = Pkforge("trajectory ../../etc/passwd --db " + db_);
  EXPECT_EQ(malformed.code, 2) << malformed.out;
  CmdResult axis = Pkforge("plateau --db " + db_ + " --axis sideways");
  EXPECT_EQ(axis.code, 2) << axis.out;
  CmdResult eps = Pkforge("plateau --db " + db_ + " --epsilon -1");
  EXPECT_EQ(eps.code, 2) << eps.out;
  CmdResult ps = Pkforge("plateau --db " + db_ + " --fast-p 1,abc");
  EXPECT_EQ(ps.code, 2) << ps.out;
  EXPECT_NE(ps.out.find("'abc' is not a number"), std::string::npos) << ps.out;
  CmdResult none = Pkforge("plateau --db " + db_ + " --problem no_such_problem");
  EXPECT_EQ(none.code, 3) << none.out;
  CmdResult cmd = Pkforge("frobnicate");
  EXPECT_EQ(cmd.code, 2) << cmd.out;
}

// --version on every binary, one version string (CMake project version and
// git describe) for all of them.
TEST_F(CliTest, EveryBinaryHasTheSameVersion) {
  CmdResult cli = Pkforge("--version");
  ASSERT_EQ(cli.code, 0) << cli.out;
  ASSERT_EQ(cli.out.rfind("pkforge ", 0), 0u) << cli.out;
  const std::string version = cli.out.substr(std::string("pkforge ").size());
  EXPECT_EQ(version.rfind(PKFORGE_PROJECT_VERSION, 0), 0u) << version;
  for (const char* bin : {"pkforge-orchestrator", "pkforge-executor", "pkforge-worker",
                          "pkforge-sandbox"}) {
    CmdResult r = Pkforge("version >/dev/null; " + std::string(PKFORGE_BIN_DIR) + "/" + bin +
                          " --version; echo rc=$?");
    EXPECT_EQ(r.out, std::string(bin) + " " + version + "rc=0\n") << bin;
  }
  CmdResult sub = Pkforge("version");
  EXPECT_NE(sub.out.find(version.substr(0, version.size() - 1)), std::string::npos) << sub.out;
}

// One -o table|json|csv (with --json as its alias) on the record commands.
TEST_F(CliTest, OutputOptionIsTheSameEverywhere) {
  Populate();
  CmdResult json = Pkforge("jobs --db " + db_ + " -o json");
  ASSERT_EQ(json.code, 0) << json.out;
  EXPECT_EQ(json.out, Pkforge("jobs --db " + db_ + " --json").out);
  EXPECT_EQ(nlohmann::json::parse(json.out).size(), 2u);
  CmdResult csv = Pkforge("jobs --db " + db_ + " -o csv");
  ASSERT_EQ(csv.code, 0) << csv.out;
  EXPECT_EQ(csv.out.rfind("id,state,problem,backend,world_size,", 0), 0u) << csv.out;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 3) << csv.out;
  CmdResult traj = Pkforge("trajectory " + job_ids_[0] + " --db " + db_ + " -o csv");
  ASSERT_EQ(traj.code, 0) << traj.out;
  EXPECT_EQ(traj.out.rfind("evaluation_id,elapsed_s", 0), 0u) << traj.out;
  CmdResult plateau = Pkforge("plateau --db " + db_ + " -o csv");
  ASSERT_EQ(plateau.code, 0) << plateau.out;
  EXPECT_NE(plateau.out.find(job_ids_[0]), std::string::npos) << plateau.out;
  EXPECT_EQ(plateau.out.find("JOB "), std::string::npos) << plateau.out;  // not the table
  CmdResult bad = Pkforge("jobs --db " + db_ + " -o yaml");
  EXPECT_EQ(bad.code, 2) << bad.out;
  for (const char* cmd : {"submit", "watch J", "show J", "cancel J", "problems", "executors",
                          "local", "eval F", "llm check", "jobs", "trajectory J", "plateau"}) {
    CmdResult help = Pkforge(std::string(cmd) + " --help");
    EXPECT_NE(help.out.find("-o,--output"), std::string::npos) << cmd << "\n" << help.out;
    EXPECT_NE(help.out.find("--json"), std::string::npos) << cmd;
  }
}

// Proto JSON uses the .proto field names (snake_case) and prints zero values.
TEST_F(CliTest, ProtoJsonIsSnakeCaseWithZeroValues) {
  Populate();
  CmdResult r = Pkforge("show " + job_ids_[1] + " --db " + db_ + " -o json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  const auto& job = j["job"];
  EXPECT_TRUE(job.contains("best_roofline_fraction")) << job.dump();
  EXPECT_TRUE(job.contains("elapsed_ms")) << job.dump();
  EXPECT_EQ(job["turns"], 0) << job.dump();  // a zero, printed
  EXPECT_TRUE(job["spec"].contains("world_size")) << job.dump();
  EXPECT_EQ(r.out.find("elapsedMs"), std::string::npos) << r.out;
}

// % of roofline above 100% is reported as suspect, never as the number.
TEST_F(CliTest, RooflineAboveTheCeilingIsSuspect) {
  Populate();
  CmdResult r = Pkforge("show " + job_ids_[0] + " --db " + db_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("suspect (>100% of the measured ceiling)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("149.7"), std::string::npos) << r.out;
}

// Durations go through absl::ParseDuration: 1h30m is accepted (the submit
// then fails only because nothing listens), nonsense names --budget.
TEST_F(CliTest, BudgetsAreAbslDurations) {
  const std::string base = "submit --orchestrator 127.0.0.1:1 --backend host --world-size 2 --budget=";
  for (const char* ok : {"1h30m", "90s", "5m", "1.5h", "120"}) {
    CmdResult r = Pkforge(base + ok);
    EXPECT_EQ(r.code, 4) << ok << ": " << r.out;  // unavailable, not a usage error
  }
  for (const char* bad : {"5x", "1h30", "-5m", "inf", "m"}) {
    CmdResult r = Pkforge(base + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("--budget"), std::string::npos) << r.out;
  }
}

// The job flags of `submit` and `local` are one definition: same names, help
// and defaults.
TEST_F(CliTest, SubmitAndLocalShareJobFlagsAndDefaults) {
  auto job_flag_lines = [](const std::string& help) {
    std::vector<std::string> out;
    std::istringstream in(help);
    std::string line;
    for (const char* flag : {"--problem", "--backend", "--world-size", "--size", "--dtype",
                             "--agent", "--model", "--budget", "--max-evaluations", "--seed",
                             "--label", "--trials", "--temperature"}) {
      const size_t at = help.find(std::string("  ") + flag + " ");
      out.push_back(at == std::string::npos ? std::string("missing ") + flag
                                            : help.substr(at, help.find('\n', at) - at));
    }
    return out;
  };
  const auto submit = job_flag_lines(Pkforge("submit --help").out);
  const auto local = job_flag_lines(Pkforge("local --help").out);
  EXPECT_EQ(submit, local);
  const std::string joined = testing::PrintToString(local);
  EXPECT_NE(joined.find("--size TEXT=default"), std::string::npos) << joined;
  EXPECT_NE(joined.find("--budget TEXT=10m"), std::string::npos) << joined;
}

// Without a GPU, a bare `pkforge local` runs a multi-rank job (4 ranks as
// processes on the host backend) and says that host timings are CPU timings.
TEST_F(CliTest, LocalOnTheHostIsMultiRankAndSaysTimingsAreCpu) {
  const std::string data = (dir_ / "data-default").string();
  CmdResult r = Pkforge("local --backend host --size tiny --budget 120s --max-evaluations 3 "
                        "--data-dir " + data + "; echo rc=$?");
  ASSERT_NE(r.out.find("rc=0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("world size 4 (the host default"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("every timing is a CPU timing"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(re-measured: one fresh evaluation of the best candidate)"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept out of the best-so-far/plateau figures"), std::string::npos)
      << r.out;
  // The watch shows the result when the re-measurement arrives.
  EXPECT_NE(r.out.find(" (fresh re-measurement)"), std::string::npos) << r.out;
  auto store = storage::TrajectoryStore::Open((fs::path(data) / "pkforge.db").string());
  ASSERT_TRUE(store.ok());
  auto jobs = (*store)->ListJobs({});
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].world_size, 4);
  // Issue #18 item 5, in the database the real orchestrator wrote: the
  // search's first rung (fewer iterations than the job's) is stored as not
  // comparable and made no best; its last rung ran at the job's own settings
  // and is the job's best; the orchestrator's final fresh re-measurement is
  // stored as its own evaluation and is the job's result.
  auto evals = (*store)->ListEvaluations((*jobs)[0].id);
  ASSERT_TRUE(evals.ok());
  int rungs = 0, comparable = 0, finals = 0;
  std::string best_id;
  for (const auto& e : *evals) {
    rungs += e.role == storage::kRoleSearch && !e.comparable;
    if (e.role == storage::kRoleSearch && e.comparable) ++comparable, best_id = e.id;
    finals += e.role == storage::kRoleFinal;
  }
  EXPECT_EQ(rungs, 2);
  EXPECT_EQ(comparable, 1);
  EXPECT_EQ(finals, 1);
  ASSERT_TRUE((*jobs)[0].best_speedup.has_value());
  EXPECT_EQ((*jobs)[0].best_evaluation_id, best_id) << "a rung made the job's best";
  auto stats = (*store)->GetJobStats((*jobs)[0].id);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->evaluations, rungs + comparable);  // the final measurement is not counted
  EXPECT_EQ(stats->other_evaluations, rungs);
  EXPECT_EQ(stats->final_status, "OK");
  ASSERT_TRUE(stats->final_speedup.has_value());
  // `show --db` prints the result apart from the search's measurements.
  CmdResult show = Pkforge("show " + (*jobs)[0].id + " --db " + data + "/pkforge.db");
  EXPECT_NE(show.out.find("result     "), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("(re-measured: one fresh evaluation of the chosen candidate"),
            std::string::npos) << show.out;
  EXPECT_NE(show.out.find("other      " + std::to_string(rungs) + " evaluation(s) at other settings"),
            std::string::npos) << show.out;
}

TEST_F(CliTest, VersionPrintsSchema) {
  CmdResult r = Pkforge("version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("trajectory schema v" + std::to_string(storage::CurrentSchemaVersion())),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace pkforge::cli
