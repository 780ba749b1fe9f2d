// `pkforge report` end to end, rendered by a real browser (issue 18 item 2):
// a real job (search agent, host backend) on a real orchestrator process and
// executor, its report written through the orchestrator and offline with
// --db, each loaded in headless Chromium (Debian's `chromium`): the DOM the
// browser built has one row per evaluation in the database and both plots,
// hostile text in a candidate stays text, and screenshots of the report and
// of the plateau SVG are saved under the build directory (paths printed).
// Skips (with the reason) only when no chromium is installed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "cli/testing/cli_test_util.h"
#include "executor/config.h"
#include "executor/server.h"
#include "orchestrator/testing/test_util.h"
#include "storage/store.h"

namespace pkforge::cli {
namespace {

namespace fs = std::filesystem;

using test_util::Cmd;
Cmd Sh(const std::string& cmd) { return test_util::Shell(cmd); }

std::string Chromium() {
  for (const char* c : {"chromium", "chromium-headless-shell", "chromium-browser"}) {
    Cmd r = Sh(absl::StrCat("command -v ", c, " 2>/dev/null"));
    if (r.rc == 0 && !r.out.empty()) return r.out.substr(0, r.out.find('\n'));
  }
  return "";
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1)) {
    ++n;
  }
  return n;
}

class ReportE2eTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = orchestrator::testing::MakeTempDir("pkf_report"); }
  void TearDown() override {
    orchestrator_.reset();
    executor_.reset();
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  void StartDaemons() {
    test_util::DaemonOptions o;
    o.dir = dir_;
    o.db = db_;
    o.orchestrator_bin = PKFORGE_ORCH_BIN;
    o.bin_dir = PKFORGE_BIN_DIR;
    auto d = test_util::StartDaemons(o);
    ASSERT_TRUE(d.ok()) << d.status();
    executor_ = std::move(d->executor);
    orchestrator_ = std::move(d->orchestrator);
  }

  // The DOM Chromium built from `file` (after parsing, as a browser sees it).
  std::string DumpDom(const std::string& file) {
    Cmd r = Sh(absl::StrCat("timeout 120 ", chromium_, " --headless --no-sandbox --disable-gpu ",
                            "--user-data-dir=", dir_, "/chrome-profile --dump-dom file://", file,
                            " 2>", dir_, "/chrome.err"));
    EXPECT_EQ(r.rc, 0) << "chromium --dump-dom " << file;
    return r.out;
  }
  void Screenshot(const std::string& file, const std::string& png, int w, int h) {
    fs::remove(png);
    Cmd r = Sh(absl::StrCat("timeout 120 ", chromium_, " --headless --no-sandbox --disable-gpu ",
                            "--hide-scrollbars --user-data-dir=", dir_, "/chrome-profile ",
                            "--window-size=", w, ",", h, " --screenshot=", png, " file://", file,
                            " 2>", dir_, "/chrome.err"));
    EXPECT_EQ(r.rc, 0) << "chromium --screenshot " << file;
    ASSERT_TRUE(fs::exists(png)) << png;
    EXPECT_GT(fs::file_size(png), 10000u) << png;  // a rendered page, not a blank image
    std::printf("screenshot: %s\n", png.c_str());
  }

  std::string chromium_, dir_, shots_;
  std::string db_;
  std::unique_ptr<executor::ExecutorServer> executor_;
  std::unique_ptr<orchestrator::testing::ChildProcess> orchestrator_;
};

class ReportChromiumTest : public ReportE2eTest {
 protected:
  void SetUp() override {
    chromium_ = Chromium();
    if (chromium_.empty()) {
      GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs Debian's "
                      "`chromium`); the HTML report is not checked in a browser";
    }
    ReportE2eTest::SetUp();
    shots_ = std::string(PKFORGE_BUILD_DIR) + "/report-screenshots";
    fs::create_directories(shots_);
  }
};

// A finished llm job written straight into `db`: two candidates (the second
// hostile), one LLM call whose reply is hostile and whose prompt has
// `prompt_bytes` bytes. Returns the job id.
std::string WriteHostileJob(const std::string& db, size_t prompt_bytes) {
  const std::string job_id = NewId("job");
  auto store = storage::TrajectoryStore::Open(db);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return "";
  storage::JobRecord job;
  job.id = job_id;
  job.spec_json = R"({"problem":"allreduce","worldSize":2,"agent":{"kind":"AGENT_KIND_LLM"}})";
  job.problem = "allreduce";
  job.backend = "host";
  job.world_size = 2;
  job.dtype = "f32";
  job.agent_kind = "llm";
  job.model = "m";
  job.strategy = "sequential";
  EXPECT_TRUE((*store)->CreateJob(job).ok());
  EXPECT_TRUE((*store)->UpdateJobState(job_id, storage::JobState::kRunning).ok());
  storage::TurnRecord turn;
  turn.id = NewId("turn");
  turn.job_id = job_id;
  EXPECT_TRUE((*store)->AddTurn(turn).ok());
  storage::LlmCallRecord call;
  call.id = NewId("llm");
  call.job_id = job_id;
  call.turn_id = turn.id;
  call.provider = "openai";
  call.model = "m";
  call.prompt = "[\"" + std::string(prompt_bytes, 'p') + "\"]";
  call.reply = "</pre></details><script>document.title='pwned-reply'</script>" +
               std::string(prompt_bytes / 4, 'r');
  EXPECT_TRUE((*store)->AddLlmCall(call).ok());
  const std::string sources[] = {
      "int pkf_run() { return 0; }\n",
      "int pkf_run() { return 1; }\n// </script><script>document.title='pwned'</script>\n"
      "// <img src=x onerror=\"document.title='pwned-img'\"></pre></td></tr></table>\n"};
  int i = 0;
  for (const auto& src : sources) {
    storage::CandidateRecord c;
    c.source = src;
    c.sha256 = Sha256Hex(src);
    c.backend = "host";
    EXPECT_TRUE((*store)->PutCandidate(c).ok());
    storage::EvaluationRecord e;
    e.id = NewId("eval");
    e.job_id = job_id;
    e.turn_id = turn.id;
    e.candidate_sha256 = c.sha256;
    e.status = "OK";
    e.correct = true;
    e.speedup = 1.0 + i;
    e.result_json = R"({"status":"OK","message":"<b>bold</b>"})";
    e.elapsed_ms = 1000 * ++i;
    EXPECT_TRUE((*store)->AddEvaluation(e).ok());
  }
  EXPECT_TRUE((*store)->UpdateJobState(job_id, storage::JobState::kSucceeded).ok());
  return job_id;
}

TEST_F(ReportChromiumTest, RealJobReportRemoteAndOfflineInChromium) {
  db_ = dir_ + "/traj.db";
  ASSERT_NO_FATAL_FAILURE(StartDaemons());
  const std::string orch = absl::StrCat(" --orchestrator ", orchestrator_->address());
  Cmd sub = Sh(absl::StrCat(PKFORGE_BIN, " submit", orch,
                            " --problem allreduce --backend host --world-size 2 --size tiny "
                            "--agent search --budget 120s --max-evaluations 6 --watch 2>&1"));
  ASSERT_EQ(sub.rc, 0) << sub.out;
  const std::string job = sub.out.substr(0, sub.out.find('\n'));
  ASSERT_TRUE(ValidateId(job, "job").ok()) << sub.out;

  const std::string remote_html = dir_ + "/remote.html", offline_html = dir_ + "/offline.html";
  Cmd r1 = Sh(absl::StrCat(PKFORGE_BIN, " report ", job, orch, " -o ", remote_html, " 2>&1"));
  ASSERT_EQ(r1.rc, 0) << r1.out;
  Cmd r2 = Sh(absl::StrCat(PKFORGE_BIN, " report ", job, " --db ", db_, " -o ", offline_html,
                           " 2>&1"));
  ASSERT_EQ(r2.rc, 0) << r2.out;

  storage::TrajectoryStore::Options ro;
  ro.access = storage::TrajectoryStore::Options::Access::kReadOnly;
  auto store = storage::TrajectoryStore::Open(db_, ro);
  ASSERT_TRUE(store.ok()) << store.status();
  auto evals = (*store)->ListEvaluations(job);
  ASSERT_TRUE(evals.ok()) << evals.status();
  ASSERT_GE(evals->size(), 2u);
  auto rec = (*store)->GetJob(job);
  ASSERT_TRUE(rec.ok());

  for (const std::string& file : {remote_html, offline_html}) {
    const std::string dom = DumpDom(file);
    EXPECT_EQ(Count(dom, "<tr class=\"eval"), evals->size()) << file;
    EXPECT_EQ(Count(dom, "<svg class=\"plot\""), 3u) << file;  // wall, active, roofline
    EXPECT_EQ(Count(dom, "<path class=\"best\""), rec->best_speedup ? 2u : 0u) << file;
    EXPECT_NE(dom.find("id=\"best-source\""), std::string::npos) << file;
    for (const auto& e : *evals) {
      EXPECT_NE(dom.find(absl::StrCat("id=\"", e.id, "\"")), std::string::npos) << e.id;
    }
  }
  Screenshot(offline_html, shots_ + "/report.png", 1400, 1300);

  // The plateau SVG of the same database, as a browser draws it.
  const std::string svg = dir_ + "/plateau.svg";
  Cmd p = Sh(absl::StrCat(PKFORGE_BIN, " plateau --db ", db_, " --svg ", svg, " 2>&1"));
  ASSERT_EQ(p.rc, 0) << p.out;
  const std::string svg_dom = DumpDom(svg);
  EXPECT_NE(svg_dom.find("<svg"), std::string::npos) << svg_dom.substr(0, 500);
  // One group (groups mode); the search's rungs timed with other iteration
  // counts than the job's are not drawn, and the plot says so.
  EXPECT_EQ(Count(svg_dom, "class=\"series\""), 1u);
  EXPECT_NE(svg_dom.find("at other settings (search rungs) not drawn"), std::string::npos);
  Screenshot(svg, shots_ + "/plateau.png", 980, 580);
}

// A candidate whose source closes the page's elements and opens a script, and
// an LLM reply doing the same: Chromium shows them as text, runs nothing, and
// makes no element of them.
TEST_F(ReportChromiumTest, HostileSourceStaysTextInChromium) {
  db_ = dir_ + "/hostile.db";
  const std::string job_id = WriteHostileJob(db_, 0);
  ASSERT_FALSE(job_id.empty());
  const std::string html = dir_ + "/hostile.html";
  Cmd r = Sh(absl::StrCat(PKFORGE_BIN, " report ", job_id, " --db ", db_, " -o ", html, " 2>&1"));
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string dom = DumpDom(html);
  EXPECT_EQ(dom.find("<script"), std::string::npos);
  EXPECT_EQ(dom.find("<img"), std::string::npos);
  EXPECT_EQ(dom.find("<b>bold"), std::string::npos);
  EXPECT_EQ(dom.find("pwned</title>"), std::string::npos);
  EXPECT_EQ(Count(dom, "<tr class=\"eval"), 2u);  // the closing tags closed nothing
  EXPECT_EQ(Count(dom, "<table"), 1u);
  EXPECT_NE(dom.find("&lt;/script&gt;&lt;script&gt;document.title='pwned'"), std::string::npos);
  EXPECT_NE(dom.find("&lt;/pre&gt;&lt;/details&gt;&lt;script&gt;"), std::string::npos);
  EXPECT_NE(dom.find("<title>pkforge allreduce"), std::string::npos);
}

// Through the orchestrator, a trajectory far above gRPC's default 4 MiB
// reply limit (a long LLM job's prompts) still makes a report; the page
// clips the long texts. Needs no browser.
TEST_F(ReportE2eTest, TrajectoryAboveFourMebibytesThroughTheOrchestrator) {
  db_ = dir_ + "/large.db";
  const std::string job_id = WriteHostileJob(db_, 6u << 20);
  ASSERT_FALSE(job_id.empty());
  ASSERT_NO_FATAL_FAILURE(StartDaemons());
  const std::string html = dir_ + "/large.html";
  Cmd r = Sh(absl::StrCat(PKFORGE_BIN, " report ", job_id, " --orchestrator ",
                          orchestrator_->address(), " -o ", html, " 2>&1"));
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream in(html);
  std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_LT(page.size(), 1u << 20);
  EXPECT_NE(page.find("more bytes not shown]"), std::string::npos);
  EXPECT_EQ(Count(page, "<tr class=\"eval"), 2u);
}

}  // namespace
}  // namespace pkforge::cli
