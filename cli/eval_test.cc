// `pkforge eval` end to end (issue 15's missing tests): the real binary
// against a real in-process executor on the host backend (readable report,
// exit codes, cache hit), over TLS with --tls-ca, and the report's profile
// and sanitizer sections from a canned executor (profiling needs a GPU).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "executor/config.h"
#include "executor/server.h"
#include "executor/testing_candidates.h"
#include "orchestrator/testing/tls_certs.h"
#include "pkforge/v1/executor.grpc.pb.h"

namespace pkforge::cli {
namespace {

namespace fs = std::filesystem;

struct Cmd {
  int rc = -1;
  std::string out;  // stdout only (progress goes to stderr)
  std::string err;
};

class EvalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pkf_eval_test_XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    server_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void StartExecutor(const std::string& cert = "", const std::string& key = "",
                     int64_t max_file_mb = 64) {
    executor::ExecutorConfig c;
    c.listen = "127.0.0.1:0";
    c.data_dir = dir_ + "/data";
    c.gpus = "none";
    c.nvcc = "none";
    c.measure_ceilings = false;
    c.host_slots = 1;
    c.default_timeout_s = 20;
    c.worker_path = std::string(PKFORGE_BIN_DIR) + "/pkforge-worker";
    c.max_file_mb = max_file_mb;
    c.tmpfs_mb = 2 * max_file_mb;
    c.run_memory_mb = 4096;
    c.tls_cert_file = cert;
    c.tls_key_file = key;
    ASSERT_TRUE(executor::Finalize(&c, std::string(PKFORGE_BIN_DIR) + "/pkforge-executor").ok());
    auto s = executor::ExecutorServer::Start(c);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
  }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  Cmd Eval(const std::string& args) {
    const std::string err = dir_ + "/stderr.txt";
    const std::string cmd = absl::StrCat(PKFORGE_BIN, " eval ", args, " 2>", err);
    Cmd r;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(err);
    r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return r;
  }

  static std::string Allreduce(const std::string& post = "") {
    return absl::StrReplaceAll(executor::test_candidates::kAllreduce, {{"/*POST*/", post}});
  }

  std::string dir_;
  std::unique_ptr<executor::ExecutorServer> server_;
};

constexpr const char* kHostArgs = "--problem allreduce --backend host --world-size 2 --dtype f32 --size tiny "
                                  "--trials 2 --iters 3 ";

TEST_F(EvalTest, ReadableReportOfAnOkCandidateOnTheHostBackend) {
  StartExecutor();
  const std::string file = Write("cand.cc", Allreduce());
  Cmd r = Eval(absl::StrCat("--executor ", server_->address(), " ", kHostArgs, file));
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("OK: ", 0), 0u) << r.out;
  for (const std::string& line :
       {std::string("  evaluation "), std::string(" allreduce BACKEND_HOST world_size 2 DTYPE_F32\n"),
        std::string("  compile: compiled, "), std::string("  correctness: 2/2 trials passed\n"),
        std::string("  timing (max over ranks per iteration):\n"), std::string("  reference  median "),
        std::string("  candidate  median "), std::string("  speedup "), std::string("  roofline "),
        std::string("  time: total ")}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << "missing '" << line << "' in\n" << r.out;
  }
  EXPECT_EQ(r.out.find("WARNING"), std::string::npos) << r.out;
  // Progress went to stderr, not into the report.
  EXPECT_NE(r.err.find("compiling"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("compiling"), std::string::npos) << r.out;

  // The same file again: a compile-cache hit; --quiet silences progress.
  Cmd again = Eval(absl::StrCat("--quiet --executor ", server_->address(), " ", kHostArgs, file));
  ASSERT_EQ(again.rc, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("  compile: cache hit, "), std::string::npos) << again.out;
  EXPECT_EQ(again.err.find("compiling"), std::string::npos) << again.err;
}

TEST_F(EvalTest, WrongOutputExitsOneAndShowsTheMismatch) {
  StartExecutor();
  const std::string file = Write("wrong.cc", Allreduce(" + 1.0f"));
  Cmd r = Eval(absl::StrCat("--quiet --executor ", server_->address(), " ", kHostArgs, file));
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("WRONG_OUTPUT: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("  correctness: 0/"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" wrong; first at "), std::string::npos) << r.out;
}

// Red team round 14 r14_ansi_forge: what a candidate prints reaches the
// person reading `pkforge eval` (stderr tails, messages quoting it); raw
// escape sequences could clear the screen and draw a made-up verdict. The
// report writes every control character as a visible escape.
TEST_F(EvalTest, TerminalEscapesFromACandidateArePrintedAsText) {
  StartExecutor();
  const std::string file = Write(
      "ansi.cc", absl::StrReplaceAll(
                     executor::test_candidates::kAllreduce,
                     {{"/*PRE*/", "fprintf(stderr, \"\\033[2J\\033[HOK: speedup 41.724x\\033[8m\\n\"); "
                                  "fflush(stderr); return 3;"}}));
  Cmd r = Eval(absl::StrCat("--quiet --executor ", server_->address(), " ", kHostArgs, file));
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("RUNTIME_ERROR: ", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\\x1b[2J\\x1b[HOK: speedup 41.724x\\x1b[8m"), std::string::npos) << r.out;
}

// Issue #17 item 5, through the real executor: a candidate specialized for
// the prompt's shape (tiny: M=3, N=37; nothing written at any other) is OK on
// it and WRONG_OUTPUT on hidden shapes; the report names the drawn dims. A
// size ladder reports every size and the geometric mean.
TEST_F(EvalTest, HiddenShapesCatchAHardCodedShapeAndTheLadderReportsAMultiSizeScore) {
  // The default size's segments (2 ranks x 2 sides x 4 slots of 1024x1024 f32) exceed 64 MiB.
  StartExecutor("", "", 512);
  const std::string file = Write(
      "hardcoded.cc",
      absl::StrReplaceAll(executor::test_candidates::kAllreduce,
                          {{"/*PRE*/", "if (in[0].shape[0] != 3 || in[0].shape[1] != 37) return 0;"}}));
  const std::string base = absl::StrCat("--quiet --executor ", server_->address(), " ", kHostArgs);
  Cmd plain = Eval(absl::StrCat(base, file));
  EXPECT_EQ(plain.rc, 0) << plain.out << plain.err;
  EXPECT_EQ(plain.out.find("hidden shapes"), std::string::npos) << plain.out;
  Cmd hidden = Eval(absl::StrCat(base, "--hidden-shapes ", file));
  EXPECT_EQ(hidden.rc, 1) << hidden.out << hidden.err;
  EXPECT_EQ(hidden.out.rfind("WRONG_OUTPUT: ", 0), 0u) << hidden.out;
  EXPECT_NE(hidden.out.find("  hidden shapes: M="), std::string::npos) << hidden.out;
  EXPECT_EQ(hidden.out.find("hidden shapes: M=3,N=37\n"), std::string::npos) << hidden.out;

  const std::string honest = Write("honest.cc", Allreduce());
  Cmd ladder = Eval(absl::StrCat(base, "--sizes tiny,default ", honest));
  ASSERT_EQ(ladder.rc, 0) << ladder.out << ladder.err;
  EXPECT_NE(ladder.out.find("  size tiny     OK "), std::string::npos) << ladder.out;
  EXPECT_NE(ladder.out.find("  size default  OK "), std::string::npos) << ladder.out;
  EXPECT_NE(ladder.out.find("(M=1024,N=1024)"), std::string::npos) << ladder.out;
  EXPECT_NE(ladder.out.find("  multi-size score (geometric mean): "), std::string::npos) << ladder.out;
  // The executor refuses a bad ladder naming the field, before compiling.
  Cmd bad = Eval(absl::StrCat(base, "--sizes tiny,huge ", honest));
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE((bad.out + bad.err).find("size_ladder[1]: 'huge'"), std::string::npos) << bad.out << bad.err;
}

// Precise timing is cuda-only: through the real executor, a host request
// with it is refused before compiling, naming the field and why.
TEST_F(EvalTest, PreciseTimingOnTheHostIsRefusedNamingTheField) {
  StartExecutor();
  const std::string file = Write("honest.cc", Allreduce());
  Cmd r = Eval(absl::StrCat("--quiet --executor ", server_->address(), " ", kHostArgs,
                            "--precise-timing ", file));
  EXPECT_NE(r.rc, 0);
  EXPECT_NE((r.out + r.err).find("precise_timing: "), std::string::npos) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("needs backend cuda"), std::string::npos) << r.out << r.err;
}

TEST_F(EvalTest, TlsCaVerifiesTheExecutor) {
  const testing_tls::TestCerts certs = testing_tls::MakeTestCerts(dir_);
  ASSERT_TRUE(certs.error.empty()) << certs.error;
  StartExecutor(certs.server_cert, certs.server_key);
  const std::string file = Write("cand.cc", Allreduce());
  Cmd ok = Eval(absl::StrCat("--quiet --tls-ca ", certs.ca, " --executor ", server_->address(), " ",
                             kHostArgs, file));
  EXPECT_EQ(ok.rc, 0) << ok.out << ok.err;
  EXPECT_EQ(ok.out.rfind("OK: ", 0), 0u) << ok.out;
  // An untrusted CA or plaintext against the TLS executor: unavailable (4),
  // with the executor named, and no report.
  for (const std::string& extra : {absl::StrCat("--tls-ca ", certs.other_ca), std::string()}) {
    Cmd bad = Eval(absl::StrCat("--quiet ", extra, " --executor ", server_->address(), " ",
                                kHostArgs, file));
    EXPECT_EQ(bad.rc, 4) << extra << "\n" << bad.out << bad.err;
    EXPECT_NE(bad.err.find(server_->address()), std::string::npos) << bad.err;
    EXPECT_TRUE(bad.out.empty()) << bad.out;
  }
  Cmd missing = Eval(absl::StrCat("--tls-ca ", dir_, "/nope.pem --executor ", server_->address(),
                                  " ", kHostArgs, file));
  EXPECT_NE(missing.rc, 0);
  EXPECT_NE(missing.err.find("nope.pem"), std::string::npos) << missing.err;
}

// An executor that answers every Evaluate with a canned result, recording
// the request: the report's profile and sanitizer sections need a GPU for
// real, their formatting does not.
class CannedExecutor final : public v1::Executor::Service {
 public:
  explicit CannedExecutor(v1::EvaluationResult result) : result_(std::move(result)) {}
  grpc::Status Evaluate(grpc::ServerContext*, const v1::EvaluateRequest* req,
                        grpc::ServerWriter<v1::EvaluateProgress>* writer) override {
    {
      std::lock_guard lock(mu_);
      last_ = *req;
    }
    v1::EvaluateProgress msg;
    *msg.mutable_result() = result_;
    writer->Write(msg);
    return grpc::Status::OK;
  }
  v1::EvaluateRequest last() {
    std::lock_guard lock(mu_);
    return last_;
  }

 private:
  v1::EvaluationResult result_;
  std::mutex mu_;
  v1::EvaluateRequest last_;
};

TEST_F(EvalTest, ProfileAndSanitizerSectionsAreFormatted) {
  v1::EvaluationResult res;
  res.set_status(v1::EvaluationResult::OK);
  res.set_message("correct");
  res.set_evaluation_id("ev1");
  res.set_executor_id("canned");
  res.set_problem("allreduce");
  res.set_backend(v1::BACKEND_CUDA);
  res.set_world_size(1);
  res.set_dtype(v1::DTYPE_BF16);
  auto* prof = res.mutable_profile();
  prof->set_tool("ncu 2025.1");
  auto* k = prof->add_kernels();
  k->set_name("sum_kernel");
  k->set_invocations(48);
  k->set_duration_us(3.1);
  prof->set_text(
      "kernel | calls | mean us | DRAM % peak | achieved occupancy % | SM % peak\n"
      "sum_kernel | 48 | 3.10 | 71.2 | 88.0 | 12.5\n");
  auto* san = res.mutable_sanitizer();
  san->set_tool("memcheck");
  san->set_errors(1);
  san->set_text("========= Invalid __global__ write of size 4\n");
  CannedExecutor service(res);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  ASSERT_NE(port, 0);
  const std::string file = Write("cand.cu", "// any\n");
  Cmd r = Eval(absl::StrCat("--quiet --executor 127.0.0.1:", port,
                            " --problem allreduce --backend cuda --profile --sanitize memcheck ", file));
  server->Shutdown();
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_TRUE(service.last().profile());
  EXPECT_EQ(service.last().sanitize(), v1::SANITIZER_MEMCHECK);
  EXPECT_NE(r.out.find("  profile (ncu 2025.1):\n"
                       "kernel | calls | mean us | DRAM % peak | achieved occupancy % | SM % peak\n"
                       "sum_kernel | 48 | 3.10 | 71.2 | 88.0 | 12.5\n"
                       "  memcheck: 1 error(s)\n"
                       "========= Invalid __global__ write of size 4\n"
                       "  time: total "),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("profile error"), std::string::npos) << r.out;

  // A failed profile says why, on its own line.
  res.clear_sanitizer();
  res.mutable_profile()->clear_kernels();
  res.mutable_profile()->set_text("");
  res.mutable_profile()->set_error("ncu produced no kernel rows (exit 1): ==ERR== no GPU");
  CannedExecutor failing(res);
  grpc::ServerBuilder b2;
  int port2 = 0;
  b2.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port2);
  b2.RegisterService(&failing);
  auto server2 = b2.BuildAndStart();
  ASSERT_NE(port2, 0);
  Cmd f = Eval(absl::StrCat("--quiet --executor 127.0.0.1:", port2,
                            " --problem allreduce --backend cuda --profile ", file));
  server2->Shutdown();
  EXPECT_NE(f.out.find("  profile (ncu 2025.1):\n  profile error: ncu produced no kernel rows "
                       "(exit 1): ==ERR== no GPU\n"),
            std::string::npos)
      << f.out;
}

}  // namespace
}  // namespace pkforge::cli
