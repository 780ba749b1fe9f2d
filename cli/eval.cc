// `pkforge eval`: evaluate one kernel file on an executor and print a
// readable report (or the result as proto3 JSON with --json). Progress
// (compiling, queued, running) goes to stderr so stdout stays the report.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/files.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "common/grpc_status.h"
#include "common/net.h"
#include "common/utf8.h"
#include "google/protobuf/util/json_util.h"
#include "pkforge/v1/executor.grpc.pb.h"
#include "rpc/credentials.h"

namespace pkforge::cli {
namespace {

struct EvalOptions {
  std::string executor = "127.0.0.1:50051";
  std::string token_file;
  std::string tls_ca_file;
  std::string problem;
  std::string backend = "host";
  int world_size = 1;
  std::string dtype;
  std::string size;
  int trials = 0;
  int iters = 0;
  double timeout_s = 0;
  bool profile = false;
  std::string sanitize;
  bool skip_timing = false;
  bool hidden_shapes = false;
  bool precise_timing = false;
  std::string sizes;
  std::string output = "table";
  bool quiet = false;
  std::vector<std::string> flags;
  std::string file;
};

std::string Timing(const char* name, const v1::TimingStats& t) {
  return absl::StrFormat("  %-10s median %10.2f us   p10 %10.2f   p90 %10.2f   cv %5.3f   n %d\n",
                         name, t.median_us(), t.p10_us(), t.p90_us(), t.cv(), t.samples());
}

std::string Report(const v1::EvaluationResult& r) {
  std::string s = absl::StrCat(v1::EvaluationResult::Status_Name(r.status()), ": ", r.message(), "\n");
  absl::StrAppend(&s, "  evaluation ", r.evaluation_id(), " on ", r.executor_id(), ", ", r.problem(),
                  " ", v1::Backend_Name(r.backend()), " world_size ", r.world_size(), " ",
                  v1::Dtype_Name(r.dtype()), "\n");
  const auto& c = r.compile();
  absl::StrAppend(&s, absl::StrFormat("  compile: %s, %.0f ms, %s\n", c.cache_hit() ? "cache hit" : "compiled",
                                      c.compile_ms(), c.compiler()));
  if (r.status() == v1::EvaluationResult::COMPILE_ERROR) absl::StrAppend(&s, c.output(), "\n");
  for (const auto& f : r.failures())
    absl::StrAppend(&s, "  failure: rank ", f.rank(), " phase ", v1::Phase_Name(f.phase()), ": ",
                    f.error(), "\n", f.stderr_tail().empty() ? "" : f.stderr_tail() + "\n");
  if (r.has_timeout())
    absl::StrAppend(&s, "  timeout: phase ", v1::Phase_Name(r.timeout().phase()), " limit ",
                    r.timeout().limit_s(), " s", r.timeout().deadlock() ? " (deadlock)" : "", "\n");
  if (r.has_correctness()) {
    absl::StrAppend(&s, "  correctness: ", r.correctness().trials_passed(), "/", r.correctness().trials(),
                    " trials passed\n");
    int shown = 0;
    for (const auto& ch : r.correctness().checks()) {
      if (ch.mismatches() == 0 && !ch.unwritten()) continue;
      if (++shown > 5) break;
      absl::StrAppend(&s, absl::StrFormat(
          "    trial %d rank %d %s: %d of %d wrong%s; first at %d: expected %g, got %g (max abs err %g)\n",
          ch.trial(), ch.rank(), ch.output(), ch.mismatches(), ch.elements(),
          ch.unwritten() ? " (never written)" : "", ch.first_mismatch_index(), ch.expected(),
          ch.actual(), ch.max_abs_error()));
    }
  }
  for (const auto& ch : r.cheat_checks())
    if (!ch.passed()) absl::StrAppend(&s, "  check ", ch.check(), ch.flag_only() ? " (flag)" : " FAILED", ": ", ch.detail(), "\n");
  if (r.candidate().samples() > 0) {
    absl::StrAppend(&s, "  timing (max over ranks per iteration):\n", Timing("reference", r.reference()),
                    Timing("candidate", r.candidate()));
    if (r.has_speedup()) absl::StrAppend(&s, absl::StrFormat("  speedup %.3fx\n", r.speedup()));
    const auto& rf = r.roofline();
    // Above 100% of the ceiling is a measurement to distrust, not a result.
    const auto pct = [](double f) {
      return f > 1.0 ? std::string(kSuspectRoofline) : absl::StrFormat("%.1f%%", 100 * f);
    };
    absl::StrAppend(&s, absl::StrFormat(
        "  roofline %.2f us (%s bound): candidate %s (bus %.1f GB/s), reference %s (bus %.1f GB/s)\n",
        rf.roofline_us(), rf.bound(), pct(rf.candidate_fraction()), rf.candidate_bus_gbps(),
        pct(rf.reference_fraction()), rf.reference_bus_gbps()));
  }
  // Hidden shapes and the size ladder (issue #17 item 5).
  const auto dims_text = [](const google::protobuf::Map<std::string, int64_t>& m) {
    std::vector<std::pair<std::string, int64_t>> d(m.begin(), m.end());
    std::sort(d.begin(), d.end());
    std::string t;
    for (const auto& [k, v] : d) absl::StrAppend(&t, t.empty() ? "" : ",", k, "=", v);
    return t;
  };
  if (r.hidden_shapes())
    absl::StrAppend(&s, "  hidden shapes: ", dims_text(r.evaluated_dims()), "\n");
  if (r.precise_timing()) absl::StrAppend(&s, "  precise timing: 2 GiB of input sets per side\n");
  for (const auto& z : r.size_scores())
    absl::StrAppend(&s, absl::StrFormat("  size %-8s %-13s %s  (%s)\n", z.size(),
                                        v1::EvaluationResult::Status_Name(z.status()),
                                        z.has_speedup() ? absl::StrFormat("%.3fx", z.speedup()) : "-",
                                        dims_text(z.dims())));
  if (r.has_multi_size_score())
    absl::StrAppend(&s, absl::StrFormat("  multi-size score (geometric mean): %.3fx\n",
                                        r.multi_size_score()));
  for (const auto& f : r.flags()) absl::StrAppend(&s, "  flag: ", f, "\n");
  if (r.has_profile()) {
    absl::StrAppend(&s, "  profile (", r.profile().tool(), "):\n", r.profile().text());
    if (!r.profile().error().empty()) absl::StrAppend(&s, "  profile error: ", r.profile().error(), "\n");
  }
  if (r.has_sanitizer()) {
    absl::StrAppend(&s, "  ", r.sanitizer().tool(), ": ", r.sanitizer().errors(), " error(s)\n",
                    r.sanitizer().text());
    if (!r.sanitizer().error().empty()) absl::StrAppend(&s, "  sanitizer error: ", r.sanitizer().error(), "\n");
  }
  const auto& st = r.stages();
  absl::StrAppend(&s, absl::StrFormat(
      "  time: total %.0f ms = compile wait %.0f + compile %.0f + queue %.0f + run %.0f (+ overhead)\n",
      st.total_ms(), st.compile_wait_ms(), st.compile_ms(), st.queue_ms(), st.run_ms()));
  if (r.unsafe_no_sandbox()) absl::StrAppend(&s, "  WARNING: evaluated without sandbox\n");
  // Candidate-derived text (messages, stderr tails) cannot drive the terminal.
  return TerminalSafe(s);
}

int RunEval(const EvalOptions& o) {
  auto source = ReadFileToString(o.file);
  if (!source.ok()) return ReportStatus("eval", source.status());
  v1::EvaluateRequest req;
  req.set_problem(o.problem);
  req.set_backend(o.backend == "cuda" ? v1::BACKEND_CUDA : v1::BACKEND_HOST);
  req.set_world_size(o.world_size);
  if (!o.dtype.empty()) {
    v1::Dtype d = v1::DTYPE_UNSPECIFIED;
    if (!v1::Dtype_Parse("DTYPE_" + absl::AsciiStrToUpper(o.dtype), &d))
      return ReportStatus("eval", absl::InvalidArgumentError("--dtype: bf16, f16 or f32"));
    req.set_dtype(d);
  }
  if (!o.size.empty()) {
    if (o.size.find('=') == std::string::npos) {
      req.mutable_size()->set_preset(o.size);
    } else {
      for (absl::string_view part : absl::StrSplit(o.size, ',')) {
        const std::string kv(part);
        const auto eq = kv.find('=');
        int64_t v = 0;
        if (eq == std::string::npos || !absl::SimpleAtoi(kv.substr(eq + 1), &v))
          return ReportStatus("eval", absl::InvalidArgumentError("--size: tiny, default, large or K=V,..."));
        (*req.mutable_size()->mutable_dims()->mutable_values())[kv.substr(0, eq)] = v;
      }
    }
  }
  req.set_source(*source);
  for (const auto& f : o.flags) req.add_extra_flags(f);
  req.set_trials(o.trials);
  req.set_timed_iters(o.iters);
  req.set_timeout_s(o.timeout_s);
  req.set_profile(o.profile);
  req.set_skip_timing(o.skip_timing);
  req.set_hidden_shapes(o.hidden_shapes);
  req.set_precise_timing(o.precise_timing);
  if (!o.sizes.empty())
    for (absl::string_view size : absl::StrSplit(o.sizes, ',')) req.add_size_ladder(std::string(size));
  if (!o.sanitize.empty()) {
    v1::SanitizerTool t = v1::SANITIZER_NONE;
    if (!v1::SanitizerTool_Parse("SANITIZER_" + absl::AsciiStrToUpper(o.sanitize), &t))
      return ReportStatus("eval", absl::InvalidArgumentError(
                                      "--sanitize: memcheck, racecheck, synccheck or initcheck"));
    req.set_sanitize(t);
  }
  req.set_client_tag("pkforge-eval");

  auto creds = rpc::ChannelCredentials(!o.tls_ca_file.empty(), o.tls_ca_file, "--tls-ca");
  if (!creds.ok()) return ReportStatus("eval", creds.status());
  auto stub = v1::Executor::NewStub(grpc::CreateChannel(o.executor, *creds));
  grpc::ClientContext ctx;
  if (!o.token_file.empty()) {
    auto token = ReadTokenFile(o.token_file, TokenRole::kSend, "--token-file");
    if (!token.ok()) return ReportStatus("eval", token.status());
    ctx.AddMetadata("authorization", absl::StrCat("Bearer ", *token));
  }
  auto reader = stub->Evaluate(&ctx, req);
  v1::EvaluateProgress msg;
  v1::EvaluationResult result;
  bool have = false;
  while (reader->Read(&msg)) {
    if (msg.has_result()) {
      result = msg.result();
      have = true;
    } else if (!o.quiet) {
      if (msg.has_compiling()) std::fprintf(stderr, "[%6.0f ms] compiling\n", msg.elapsed_ms());
      if (msg.has_queued())
        std::fprintf(stderr, "[%6.0f ms] queued: position %d of %d\n", msg.elapsed_ms(),
                     msg.queued().position(), msg.queued().queue_length());
      if (msg.has_running())
        std::fprintf(stderr, "[%6.0f ms] running (%s)\n", msg.elapsed_ms(),
                     v1::Phase_Name(msg.running().phase()).c_str());
    }
  }
  grpc::Status st = reader->Finish();
  if (!st.ok()) {
    absl::Status s = FromGrpcStatus(st);
    return ReportStatus("eval", absl::Status(s.code(), absl::StrCat("executor ", o.executor, ": ", s.message())));
  }
  if (!have) return ReportStatus("eval", absl::InternalError("the executor sent no result"));
  if (o.output == "json") {
    std::printf("%s\n", ProtoJson(result).c_str());
  } else {
    std::fputs(Report(result).c_str(), stdout);
  }
  return result.status() == v1::EvaluationResult::OK ? kExitOk : kExitFailed;
}

}  // namespace

void RegisterEval(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate one kernel file on an executor");
  cmd->add_option("--executor", o->executor, "HOST:PORT")->capture_default_str()->envname("PKFORGE_EXECUTOR");
  cmd->add_option("--token-file", o->token_file, "bearer token file");
  cmd->add_option("--tls-ca", o->tls_ca_file, "PEM CA to verify the executor (TLS)");
  cmd->add_option("--problem", o->problem, "problem name")->required();
  cmd->add_option("--backend", o->backend, "host | cuda")->check(CLI::IsMember({"host", "cuda"}))->capture_default_str();
  cmd->add_option("--world-size", o->world_size, "ranks")->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "bf16 | f16 | f32 (default: the problem's)");
  cmd->add_option("--size", o->size, "tiny | default | large | K=V,...");
  cmd->add_option("--trials", o->trials, "correctness trials (0: default)");
  cmd->add_option("--iters", o->iters, "timed iterations (0: default)");
  cmd->add_option("--timeout", o->timeout_s, "seconds per phase (0: executor default)");
  cmd->add_option("--flag", o->flags, "extra compiler flag (allowlisted), repeatable");
  cmd->add_flag("--profile", o->profile, "Nsight Compute summary of the candidate's kernels");
  cmd->add_option("--sanitize", o->sanitize, "memcheck | racecheck | synccheck | initcheck");
  cmd->add_flag("--skip-timing", o->skip_timing, "correctness only");
  cmd->add_flag("--hidden-shapes", o->hidden_shapes,
                "run on shapes drawn from the problem's shape family with a secret seed");
  cmd->add_flag("--precise-timing", o->precise_timing,
                "cuda: measurement-grade timing (2 GiB of input sets per side and GPU; longer "
                "batches of short calls, ~2.5x the evaluation time)");
  cmd->add_option("--sizes", o->sizes,
                  "size ladder, e.g. tiny,default,large: multi-size score (geometric mean)");
  AddOutputOption(cmd, &o->output, {"table", "json"});
  cmd->add_flag("--quiet", o->quiet, "no progress on stderr");
  cmd->add_option("file", o->file, "candidate source (.cu for cuda, .cc for host)")->required();
  cmd->callback([o, exit_code] { *exit_code = RunEval(*o); });
}

}  // namespace pkforge::cli
