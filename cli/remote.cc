// Client commands against a running orchestrator: submit, watch, show,
// cancel, problems, executors (and the Remote helper that analysis.cc uses
// for jobs/trajectory/plateau without --db). Human-readable output by
// default, proto3 JSON with --json; exit codes as in cli/commands.h, and
// `watch` exits 0 only when the job succeeded.
#include "cli/remote.h"
#include <algorithm>
#include <filesystem>

#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cli/commands.h"
#include "cli/job_flags.h"
#include "cli/offline.h"
#include "cli/output.h"
#include "common/grpc_status.h"
#include "common/net.h"
#include "common/status.h"
#include "common/utf8.h"
#include "fmt/format.h"
#include "rpc/credentials.h"

namespace pkforge::cli {

// ------------------------------------------------------------------ Remote

void RemoteOptions::Add(CLI::App* cmd) {
  cmd->add_option("--orchestrator", orchestrator,
                  "Orchestrator HOST:PORT (default $PKFORGE_ORCHESTRATOR or 127.0.0.1:50061)");
  // envname: the variable is read only when the flag is absent (flag wins).
  cmd->add_option("--token-file", token_file,
                  "File with the orchestrator's bearer token (default $PKFORGE_TOKEN_FILE)")
      ->envname("PKFORGE_TOKEN_FILE");
  cmd->add_option("--tls-ca", tls_ca,
                  "Speak TLS and trust this CA (PEM) for the orchestrator's certificate "
                  "(default $PKFORGE_TLS_CA; docs/tls.md)")
      ->envname("PKFORGE_TLS_CA");
}

absl::StatusOr<Remote> Remote::Connect(const RemoteOptions& options) {
  Remote r;
  r.address_ = options.orchestrator;
  if (r.address_.empty()) {
    const char* env = std::getenv("PKFORGE_ORCHESTRATOR");
    r.address_ = env != nullptr && *env != '\0' ? env : "127.0.0.1:50061";
  }
  // envname: the flag or its variable may have named either file.
  if (!options.token_file.empty()) {
    ASSIGN_OR_RETURN(r.token_, ReadTokenFile(options.token_file, TokenRole::kSend,
                                             "--token-file (or PKFORGE_TOKEN_FILE)"));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> creds,
                   rpc::ChannelCredentials(!options.tls_ca.empty(), options.tls_ca,
                                           "--tls-ca (or PKFORGE_TLS_CA)"));
  r.tls_ = !options.tls_ca.empty();
  // Replies can be far above gRPC's 4 MiB default: a long LLM job's
  // trajectory with its prompts, replies and results (`pkforge report`).
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(1 << 30);
  r.stub_ = v1::Orchestrator::NewStub(grpc::CreateCustomChannel(r.address_, creds, args));
  return r;
}

std::unique_ptr<grpc::ClientContext> Remote::Context(double timeout_s) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
  if (timeout_s > 0) {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  }
  return ctx;
}

absl::Status RemoteError(const Remote& remote, const grpc::Status& status) {
  absl::Status s = FromGrpcStatus(status);
  if (absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)) {
    const std::string& m = status.error_message();
    if (remote.tls() && (m.find("andshake") != std::string::npos ||
                         m.find("CERTIFICATE_VERIFY") != std::string::npos ||
                         m.find("SSL") != std::string::npos)) {
      return Annotate(s, "TLS handshake with the orchestrator at " + remote.address() +
                             " failed: is its certificate signed by the --tls-ca CA and valid "
                             "for that host name? (docs/tls.md)");
    }
    return Annotate(s, "orchestrator at " + remote.address() +
                           (remote.tls()
                                ? " over TLS (is pkforge-orchestrator running there, serving TLS "
                                  "with a certificate from the --tls-ca CA?)"
                                : " (is pkforge-orchestrator running? --orchestrator HOST:PORT; "
                                  "if it serves TLS, give its CA with --tls-ca)"));
  }
  if (absl::IsUnauthenticated(s)) {
    return Annotate(s, remote.has_token()
                           ? "the orchestrator at " + remote.address() +
                                 " refused the token from --token-file (or PKFORGE_TOKEN_FILE)"
                           : "the orchestrator at " + remote.address() +
                                 " requires a bearer token: --token-file FILE or "
                                 "PKFORGE_TOKEN_FILE");
  }
  return s;
}

std::string ToJsonText(const google::protobuf::Message& m) { return ProtoJson(m); }

namespace {

// ----------------------------------------------------------------- helpers

std::string StateName(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_QUEUED:
      return "queued";
    case v1::JOB_STATE_RUNNING:
      return "running";
    case v1::JOB_STATE_SUCCEEDED:
      return "succeeded";
    case v1::JOB_STATE_FAILED:
      return "failed";
    case v1::JOB_STATE_CANCELLED:
      return "cancelled";
    case v1::JOB_STATE_INTERRUPTED:
      return "interrupted";
    default:
      return "unknown";
  }
}

bool Terminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED ||
         s == v1::JOB_STATE_CANCELLED || s == v1::JOB_STATE_INTERRUPTED;
}

int ExitForState(v1::JobState s) { return s == v1::JOB_STATE_SUCCEEDED ? kExitOk : kExitFailed; }

}  // namespace

absl::StatusOr<double> ParseDuration(const std::string& text) {
  if (text.empty()) return 0.0;
  // A bare number is seconds; anything else is an absl duration ("90s",
  // "5m", "1h30m", "1.5h", "250ms").
  double seconds = 0;
  absl::Duration d;
  if (absl::SimpleAtod(text, &seconds) && text.find_first_not_of("0123456789.") == std::string::npos) {
    d = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(text, &d)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--budget '", text, "': expected a duration like 90s, 5m, 1h30m or 1.5h"));
  }
  if (d < absl::ZeroDuration() || d == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--budget '", text, "': must be a finite duration >= 0"));
  }
  return absl::ToDoubleSeconds(d);
}

namespace {

std::string Speedup(const v1::Job& j) {
  return j.has_best_speedup() ? fmt::format("{:.3f}x", j.best_speedup()) : "-";
}

void PrintJob(const v1::Job& j) {
  const auto& s = j.spec();
  std::printf("job        %s\n", j.id().c_str());
  std::printf("state      %s%s%s\n", StateName(j.state()).c_str(),
              j.stop_reason().empty() ? "" : (" (" + j.stop_reason() + ")").c_str(),
              j.error().empty() ? "" : ("  error: " + TerminalSafe(j.error())).c_str());
  std::printf("problem    %s  backend=%s  world_size=%d  label=%s\n", s.problem().c_str(),
              s.backend() == v1::BACKEND_CUDA ? "cuda" : "host", s.world_size(),
              s.label().empty() ? "-" : s.label().c_str());
  std::string agent = s.agent().kind() == v1::AGENT_KIND_LLM      ? "llm " + s.agent().llm().model()
                      : s.agent().kind() == v1::AGENT_KIND_SEARCH ? "search"
                                                                  : "replay";
  std::printf("agent      %s\n", agent.c_str());
  std::printf("progress   %.1f s  turns %d  evaluations %d  tokens %lld  cost $%.4f\n",
              static_cast<double>(j.elapsed_ms()) / 1e3, j.turns(), j.evaluations(),
              static_cast<long long>(j.tokens()), j.cost_usd());
  std::printf("best       %s  %s  last status %s\n", Speedup(j).c_str(),
              RooflineText(j.best_roofline_fraction()).c_str(),
              v1::EvaluationResult::Status_Name(j.last_status()).c_str());
  // The job's result: one fresh re-measurement of the chosen candidate at the
  // job's settings (the best above is the best of many noisy measurements).
  if (j.has_final_speedup()) {
    std::printf("result     %.3fx  %s  (re-measured: one fresh evaluation of the chosen "
                "candidate, %s)\n",
                j.final_speedup(), RooflineText(j.final_roofline_fraction()).c_str(),
                j.final_evaluation_id().c_str());
  } else if (!j.final_evaluation_id().empty()) {
    std::printf("result     -  (the re-measurement %s ended %s)\n", j.final_evaluation_id().c_str(),
                v1::EvaluationResult::Status_Name(j.final_status()).c_str());
  }
  if (j.other_settings_evaluations() > 0) {
    std::printf("other      %d evaluation(s) at other settings (search rungs timed with other "
                "iteration counts), best %s: not comparable, not in best\n",
                j.other_settings_evaluations(),
                j.has_other_settings_best_speedup()
                    ? fmt::format("{:.3f}x", j.other_settings_best_speedup()).c_str()
                    : "-");
  }
}

// ------------------------------------------------------------------ submit

struct SubmitOptions {
  RemoteOptions remote;
  std::string job_file;
  JobFlags job;  // shared with `pkforge local` (cli/job_flags.h)
  std::string request_id;
  bool watch = false;
  std::string output = "table";
};

// Usable GPUs of the best-equipped healthy executor (what "auto" backend and
// world size mean for a job sent to this orchestrator).
absl::StatusOr<int> ExecutorGpus(const Remote& remote) {
  v1::ListExecutorsResponse resp;
  auto ctx = remote.Context();
  grpc::Status st = remote.stub()->ListExecutors(ctx.get(), v1::ListExecutorsRequest(), &resp);
  if (!st.ok()) return RemoteError(remote, st);
  int gpus = 0;
  for (const auto& e : resp.executors()) {
    const bool cuda = std::find(e.device().backends().begin(), e.device().backends().end(),
                                v1::BACKEND_CUDA) != e.device().backends().end();
    if (e.healthy() && cuda) gpus = std::max(gpus, e.device().usable_gpus());
  }
  return gpus;
}

absl::StatusOr<v1::JobSpec> SpecFromFlags(const SubmitOptions& so, const Remote& remote) {
  v1::JobSpec s;
  if (!so.job_file.empty()) {
    std::ifstream in(so.job_file);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", so.job_file));
    std::stringstream ss;
    ss << in.rdbuf();
    auto st = google::protobuf::util::JsonStringToMessage(ss.str(), &s);
    if (!st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(so.job_file, ": ", st.ToString()));
    }
    return s;
  }
  const JobFlags& o = so.job;
  int gpus = 0;
  if (o.backend == "auto" || (o.world_size == 0 && o.backend == "cuda")) {
    ASSIGN_OR_RETURN(gpus, ExecutorGpus(remote));
  }
  const std::string backend = o.ResolvedBackend(gpus);
  const std::string agent = o.agent != "auto"   ? o.agent
                            : !o.model.empty()  ? "llm"
                                                : "search";
  ASSIGN_OR_RETURN(s, JobSpecFromFlags(o, backend, o.ResolvedWorldSize(backend, gpus), agent,
                                       o.provider));
  auto* a = s.mutable_agent();
  if (agent == "llm" && !o.api_key_env.empty()) {
    // The client's own key, read here and sent in the request; the
    // orchestrator uses it only if its operator allows client keys for
    // this provider, and never stores or echoes it.
    const char* key = std::getenv(o.api_key_env.c_str());
    if (key == nullptr || key[0] == '\0') {
      return absl::InvalidArgumentError(
          absl::StrCat("--api-key-env: ", o.api_key_env, " is not set in this environment"));
    }
    a->mutable_llm()->set_api_key(key);
  }
  if (agent == "replay") {
    // The candidates travel in the request (the orchestrator reads no files
    // for clients unless its operator set a replay root).
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    std::error_code ec;
    for (fs::directory_iterator it(o.replay_dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec) && it->path().filename().string()[0] != '.')
        files.push_back(it->path());
    if (ec) return absl::InvalidArgumentError(absl::StrCat("--replay-dir ", o.replay_dir, ": ", ec.message()));
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::stringstream buf;
      buf << in.rdbuf();
      auto* src = a->add_replay_sources();
      src->set_name(f.filename().string());
      src->set_source(buf.str());
    }
  }
  return s;
}

int RunSubmit(const SubmitOptions& o) {
  auto remote = Remote::Connect(o.remote);
  if (!remote.ok()) return ReportStatus("submit", remote.status());
  auto spec = SpecFromFlags(o, *remote);
  if (!spec.ok()) return ReportStatus("submit", spec.status());
  v1::SubmitJobRequest req;
  *req.mutable_spec() = *spec;
  req.set_client_request_id(o.request_id);
  v1::Job job;
  auto ctx = remote->Context();
  grpc::Status st = remote->stub()->SubmitJob(ctx.get(), req, &job);
  if (!st.ok()) return ReportStatus("submit", RemoteError(*remote, st));
  const bool json = o.output == "json";
  if (json) {
    std::printf("%s\n", ToJsonText(job).c_str());
  } else {
    std::printf("%s\n", job.id().c_str());
  }
  std::fflush(stdout);
  if (o.watch) return RunWatch(*remote, job.id(), json);
  return kExitOk;
}

// ------------------------------------------------------------------- watch

struct WatchView {
  double budget_s = 0;
  int64_t elapsed_ms = 0;
  int turns = 0, evaluations = 0;
  double best = 0;
  std::string last = "-";
  v1::JobState state = v1::JOB_STATE_UNSPECIFIED;
  std::string reason;
  std::string waiting;  // why the job waits for an executor ("" = it does not)
  std::string result;   // the final re-measurement, once it arrived

  void Apply(const v1::Event& e) {
    elapsed_ms = std::max(elapsed_ms, e.elapsed_ms());
    if (e.has_state_changed()) {
      state = e.state_changed().state();
      reason = e.state_changed().reason();
    } else if (e.has_turn_started()) {
      turns = e.turn_started().index() + 1;
    } else if (e.has_evaluation_finished()) {
      const auto& f = e.evaluation_finished();
      // The job's final re-measurement is its result, not one of its evaluations.
      if (f.final_measurement()) {
        result = f.has_speedup() ? fmt::format("{:.3f}x", f.speedup())
                                 : "re-measurement " + (f.status() ==
                                                                v1::EvaluationResult::STATUS_UNSPECIFIED
                                                            ? std::string("had no result")
                                                            : v1::EvaluationResult::Status_Name(
                                                                  f.status()));
        return;
      }
      if (f.status() != v1::EvaluationResult::STATUS_UNSPECIFIED) ++evaluations;
      last = f.status() == v1::EvaluationResult::STATUS_UNSPECIFIED
                 ? "NO_RESULT"
                 : v1::EvaluationResult::Status_Name(f.status());
    } else if (e.has_best_improved()) {
      best = std::max(best, e.best_improved().speedup());
    } else if (e.has_evaluation_aborted()) {
      last = "ABORTED";
    } else if (e.has_waiting_for_executor()) {
      waiting = e.waiting_for_executor().waiting() ? e.waiting_for_executor().reason() : "";
    }
  }
  std::string Line() const {
    std::string budget = budget_s > 0 ? fmt::format("/{:.0f}s", budget_s) : "";
    return fmt::format("[{:7.1f}s{}] {:<11} turns {:3d}  evals {:4d}  best {:>8}  last {}{}",
                       static_cast<double>(elapsed_ms) / 1e3, budget, StateName(state), turns,
                       evaluations, best > 0 ? fmt::format("{:.3f}x", best) : "-", last,
                       waiting.empty() ? "" : "  (waiting for an executor: " + waiting + ")") +
           (result.empty() ? "" : "  result " + result + " (fresh re-measurement)");
  }
};

}  // namespace

int RunWatch(const Remote& remote, const std::string& job_id, bool json) {
  WatchView view;
  {
    v1::GetJobRequest req;
    req.set_job_id(job_id);
    v1::Job job;
    auto ctx = remote.Context();
    grpc::Status st = remote.stub()->GetJob(ctx.get(), req, &job);
    if (!st.ok()) return ReportStatus("watch", RemoteError(remote, st));
    view.budget_s = job.spec().budget().wall_seconds();
  }
  const bool tty = isatty(1) && !json;
  int64_t after = 0;
  int reconnects = 0;
  while (true) {
    auto ctx = remote.Context(0);
    v1::WatchJobRequest req;
    req.set_job_id(job_id);
    req.set_after_seq(after);
    auto reader = remote.stub()->WatchJob(ctx.get(), req);
    v1::WatchJobResponse resp;
    while (reader->Read(&resp)) {
      reconnects = 0;
      if (resp.has_heartbeat()) {
        if (!json && view.state != v1::JOB_STATE_UNSPECIFIED) {
          view.state = resp.heartbeat().state();
        }
      } else {
        after = resp.event().seq();
        view.Apply(resp.event());
        if (json) {
          std::printf("%s\n", ProtoJson(resp.event(), /*pretty=*/false).c_str());
        } else if (!tty) {
          // Not a terminal: one line per change of interest, no carriage returns.
          if (resp.event().has_state_changed() || resp.event().has_evaluation_finished()) {
            std::printf("%s\n", view.Line().c_str());
          }
        }
      }
      if (tty) std::printf("\r%s\033[K", view.Line().c_str());
      std::fflush(stdout);
    }
    grpc::Status st = reader->Finish();
    if (st.ok()) break;
    // A dropped stream resumes from the last seq seen, losing nothing.
    if (st.error_code() == grpc::StatusCode::UNAVAILABLE && ++reconnects <= 30) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    if (tty) std::printf("\n");
    return ReportStatus("watch", RemoteError(remote, st));
  }
  if (tty) std::printf("\n");
  if (!json) {
    std::printf("job %s %s%s\n", job_id.c_str(), StateName(view.state).c_str(),
                view.reason.empty() ? "" : (": " + view.reason).c_str());
  }
  return Terminal(view.state) ? ExitForState(view.state) : kExitFailed;
}

namespace {

// --------------------------------------------------------------- show etc.

// A fetch of the trajectory `show` prints: from the orchestrator, or with
// --db from the file, read-only (cli/offline.h).
absl::StatusOr<v1::Trajectory> ShowTrajectory(const RemoteOptions& ro, const std::string& job_id,
                                              const std::string& db) {
  if (!db.empty()) return OfflineShowTrajectory(db, job_id);
  ASSIGN_OR_RETURN(Remote remote, Remote::Connect(ro));
  v1::GetTrajectoryRequest req;
  req.set_job_id(job_id);
  req.set_include_sources(true);
  v1::Trajectory traj;
  auto ctx = remote.Context();
  grpc::Status st = remote.stub()->GetTrajectory(ctx.get(), req, &traj);
  if (!st.ok()) return RemoteError(remote, st);
  return traj;
}

int RunShow(const RemoteOptions& ro, const std::string& job_id, bool json,
            const std::string& source_out, const std::string& db) {
  absl::StatusOr<v1::Trajectory> fetched = ShowTrajectory(ro, job_id, db);
  if (!fetched.ok()) return ReportStatus("show", fetched.status());
  const v1::Trajectory& traj = *fetched;
  const v1::Job& job = traj.job();
  // The candidate of the job's result (the final re-measurement), else the
  // best at the job's settings.
  const std::string& chosen =
      job.final_candidate_sha256().empty() ? job.best_candidate_sha256() : job.final_candidate_sha256();
  std::string source;
  for (const auto& c : traj.candidates()) {
    if (c.sha256() == chosen) source = c.source();
  }
  if (!source_out.empty() && !source.empty()) {
    std::ofstream out(source_out, std::ios::binary | std::ios::trunc);
    out << source;
    if (!out) return ReportStatus("show", absl::UnavailableError("writing " + source_out));
  }
  if (json) {
    v1::Trajectory summary;
    *summary.mutable_job() = job;
    for (const auto& c : traj.candidates()) {
      if (c.sha256() == chosen) *summary.add_candidates() = c;
    }
    *summary.mutable_best_curve() = traj.best_curve();
    std::printf("%s\n", ToJsonText(summary).c_str());
    return kExitOk;
  }
  PrintJob(job);
  if (chosen.empty()) {
    std::printf("\nno correct candidate yet\n");
    return kExitOk;
  }
  std::printf("\nbest candidate %s%s\n", chosen.c_str(),
              source_out.empty() ? "" : (" (written to " + source_out + ")").c_str());
  if (source_out.empty()) std::printf("----\n%s\n----\n", source.c_str());
  return kExitOk;
}

int RunCancel(const RemoteOptions& ro, const std::string& job_id, const std::string& reason,
              bool json) {
  auto remote = Remote::Connect(ro);
  if (!remote.ok()) return ReportStatus("cancel", remote.status());
  v1::CancelJobRequest req;
  req.set_job_id(job_id);
  req.set_reason(reason);
  v1::Job job;
  auto ctx = remote->Context();
  grpc::Status st = remote->stub()->CancelJob(ctx.get(), req, &job);
  if (!st.ok()) return ReportStatus("cancel", RemoteError(*remote, st));
  if (json) {
    std::printf("%s\n", ToJsonText(job).c_str());
  } else {
    std::printf("job %s: %s\n", job.id().c_str(),
                Terminal(job.state()) ? StateName(job.state()).c_str() : "cancelling");
  }
  return kExitOk;
}

std::string Backends(const google::protobuf::RepeatedField<int>& b) {
  std::vector<std::string> out;
  for (int x : b) out.push_back(x == v1::BACKEND_CUDA ? "cuda" : x == v1::BACKEND_HOST ? "host" : "?");
  return absl::StrJoin(out, ",");
}

int RunProblems(const RemoteOptions& ro, OutputFormat format) {
  auto remote = Remote::Connect(ro);
  if (!remote.ok()) return ReportStatus("problems", remote.status());
  v1::ListProblemsResponse resp;
  auto ctx = remote->Context();
  grpc::Status st = remote->stub()->ListProblems(ctx.get(), v1::ListProblemsRequest(), &resp);
  if (!st.ok()) return ReportStatus("problems", RemoteError(*remote, st));
  if (format == OutputFormat::kJson) {
    std::printf("%s\n", ToJsonText(resp).c_str());
    return kExitOk;
  }
  if (format == OutputFormat::kCsv) {
    std::printf("%s", CsvLine({"problem", "category", "backends", "size_presets", "min_world_size",
                               "max_world_size"}).c_str());
    for (const auto& p : resp.problems()) {
      std::printf("%s", CsvLine({p.name(), p.category(), Backends(p.backends()),
                                 absl::StrJoin(p.size_presets(), ","),
                                 std::to_string(p.min_world_size()),
                                 std::to_string(p.max_world_size())}).c_str());
    }
    return kExitOk;
  }
  std::printf("%-22s %-18s %-10s %-16s %s\n", "PROBLEM", "CATEGORY", "BACKENDS", "PRESETS",
              "WORLD_SIZE");
  for (const auto& p : resp.problems()) {
    std::printf("%-22s %-18s %-10s %-16s %d..%d\n", p.name().c_str(), p.category().c_str(),
                Backends(p.backends()).c_str(), absl::StrJoin(p.size_presets(), ",").c_str(),
                p.min_world_size(), p.max_world_size());
  }
  return kExitOk;
}

int RunExecutors(const RemoteOptions& ro, OutputFormat format) {
  auto remote = Remote::Connect(ro);
  if (!remote.ok()) return ReportStatus("executors", remote.status());
  v1::ListExecutorsResponse resp;
  auto ctx = remote->Context();
  grpc::Status st = remote->stub()->ListExecutors(ctx.get(), v1::ListExecutorsRequest(), &resp);
  if (!st.ok()) return ReportStatus("executors", RemoteError(*remote, st));
  if (format == OutputFormat::kJson) {
    std::printf("%s\n", ToJsonText(resp).c_str());
    return kExitOk;
  }
  if (format == OutputFormat::kCsv) {
    std::printf("%s", CsvLine({"executor", "healthy", "in_flight", "completed", "usable_gpus",
                               "backends", "last_error"}).c_str());
    for (const auto& e : resp.executors()) {
      std::printf("%s", CsvLine({e.address(), e.healthy() ? "true" : "false",
                                 std::to_string(e.in_flight()), std::to_string(e.completed()),
                                 std::to_string(e.device().usable_gpus()),
                                 Backends(e.device().backends()), e.last_error()}).c_str());
    }
    return kExitOk;
  }
  std::printf("%-24s %-8s %-9s %-9s %-5s %-10s %s\n", "EXECUTOR", "HEALTHY", "IN_FLIGHT",
              "COMPLETED", "GPUS", "BACKENDS", "LAST_ERROR");
  for (const auto& e : resp.executors()) {
    std::printf("%-24s %-8s %-9d %-9lld %-5d %-10s %s\n", e.address().c_str(),
                e.healthy() ? "yes" : "NO", e.in_flight(), static_cast<long long>(e.completed()),
                e.device().usable_gpus(), Backends(e.device().backends()).c_str(),
                e.last_error().empty() ? "-" : TerminalSafe(e.last_error()).c_str());
  }
  return kExitOk;
}

}  // namespace

void RegisterRemote(CLI::App& app, int* exit_code) {
  RegisterReport(app, exit_code);  // cli/report_cmd.cc: like show, remote or --db
  {
    auto o = std::make_shared<SubmitOptions>();
    CLI::App* cmd = app.add_subcommand("submit", "Submit an optimization job to the orchestrator");
    o->remote.Add(cmd);
    cmd->add_option("--job-file", o->job_file, "JobSpec as proto3 JSON (other spec flags ignored)");
    o->job.Add(cmd,
               "llm: one of the orchestrator's providers (its operator configures them "
               "with pkforge-orchestrator --provider NAME=KIND,BASE_URL,KEY_ENV)");
    cmd->add_option("--request-id", o->request_id, "Idempotency key");
    cmd->add_flag("--watch", o->watch, "Watch the job until it ends");
    AddOutputOption(cmd, &o->output, {"table", "json"});
    cmd->callback([o, exit_code] { *exit_code = RunSubmit(*o); });
  }
  {
    auto ro = std::make_shared<RemoteOptions>();
    auto job = std::make_shared<std::string>();
    auto output = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("watch", "Follow a job live until it ends");
    cmd->add_option("job", *job, "Job id")->required();
    ro->Add(cmd);
    AddOutputOption(cmd, output.get(), {"table", "json"});  // json: one event per line
    cmd->callback([ro, job, output, exit_code] {
      auto remote = Remote::Connect(*ro);
      *exit_code = remote.ok() ? RunWatch(*remote, *job, *output == "json")
                               : ReportStatus("watch", remote.status());
    });
  }
  {
    auto ro = std::make_shared<RemoteOptions>();
    auto job = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    auto output = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("show", "Summary of a job and its best candidate");
    cmd->add_option("job", *job, "Job id")->required();
    ro->Add(cmd);
    cmd->add_option("--source-out", *out, "Write the best candidate's source to this file");
    AddOutputOption(cmd, output.get(), {"table", "json"});
    auto db = std::make_shared<std::string>();
    cmd->add_option("--db", *db, "Trajectory database file (offline, no server, read-only)");
    cmd->callback([=] { *exit_code = RunShow(*ro, *job, *output == "json", *out, *db); });
  }
  {
    auto ro = std::make_shared<RemoteOptions>();
    auto job = std::make_shared<std::string>();
    auto reason = std::make_shared<std::string>();
    auto output = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("cancel", "Cancel a job");
    cmd->add_option("job", *job, "Job id")->required();
    ro->Add(cmd);
    cmd->add_option("--reason", *reason, "Why (recorded)");
    AddOutputOption(cmd, output.get(), {"table", "json"});
    cmd->callback([=] { *exit_code = RunCancel(*ro, *job, *reason, *output == "json"); });
  }
  {
    auto ro = std::make_shared<RemoteOptions>();
    auto output = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("problems", "Problems the executors offer");
    ro->Add(cmd);
    AddOutputOption(cmd, output.get());
    cmd->callback([=] { *exit_code = RunProblems(*ro, ParseOutputFormat(*output)); });
  }
  {
    auto ro = std::make_shared<RemoteOptions>();
    auto output = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("executors", "Executors and their health");
    ro->Add(cmd);
    AddOutputOption(cmd, output.get());
    cmd->callback([=] { *exit_code = RunExecutors(*ro, ParseOutputFormat(*output)); });
  }
}

}  // namespace pkforge::cli
