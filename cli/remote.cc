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
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/offline.h"
#include "common/grpc_status.h"
#include "common/status.h"
#include "fmt/format.h"

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

namespace {

// The whole of a small file the user named (token, CA), or an error naming
// the flag and its environment variable, since either may have set it.
absl::StatusOr<std::string> ReadNamedFile(const std::string& path, const char* flag,
                                          const char* env) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " (or ", env, ") ", path, ": cannot read (",
                                                   std::strerror(errno), ")"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<Remote> Remote::Connect(const RemoteOptions& options) {
  Remote r;
  r.address_ = options.orchestrator;
  if (r.address_.empty()) {
    const char* env = std::getenv("PKFORGE_ORCHESTRATOR");
    r.address_ = env != nullptr && *env != '\0' ? env : "127.0.0.1:50061";
  }
  if (!options.token_file.empty()) {
    ASSIGN_OR_RETURN(r.token_,
                     ReadNamedFile(options.token_file, "--token-file", "PKFORGE_TOKEN_FILE"));
    while (!r.token_.empty() && std::isspace(static_cast<unsigned char>(r.token_.back()))) {
      r.token_.pop_back();
    }
    if (r.token_.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token-file (or PKFORGE_TOKEN_FILE) ", options.token_file, ": is empty"));
    }
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!options.tls_ca.empty()) {
    grpc::SslCredentialsOptions ssl;
    ASSIGN_OR_RETURN(ssl.pem_root_certs,
                     ReadNamedFile(options.tls_ca, "--tls-ca", "PKFORGE_TLS_CA"));
    if (ssl.pem_root_certs.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tls-ca (or PKFORGE_TLS_CA) ", options.tls_ca, ": not a PEM certificate"));
    }
    creds = grpc::SslCredentials(ssl);
    r.tls_ = true;
  }
  r.stub_ = v1::Orchestrator::NewStub(grpc::CreateChannel(r.address_, creds));
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

std::string ToJsonText(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

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

// "90", "90s", "10m", "1.5h" -> seconds.
}  // namespace

absl::StatusOr<double> ParseDuration(const std::string& text) {
  if (text.empty()) return 0.0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  std::string unit = end ? end : "";
  double mult = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (end == text.c_str() || mult < 0 || !std::isfinite(v) || v < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--budget '", text, "': expected a duration like 90s, 10m or 1h"));
  }
  return v * mult;
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
              j.error().empty() ? "" : ("  error: " + j.error()).c_str());
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
  std::printf("best       %s  roofline %.1f%%  last status %s\n", Speedup(j).c_str(),
              100 * j.best_roofline_fraction(),
              v1::EvaluationResult::Status_Name(j.last_status()).c_str());
}

// ------------------------------------------------------------------ submit

struct SubmitOptions {
  RemoteOptions remote;
  std::string job_file;
  std::string problem = "allreduce", backend = "host", dtype, size = "tiny", agent = "search";
  int world_size = 1;
  std::string provider_name, model;
  std::string api_key_env;  // this client's variable holding its own key (if the provider allows)
  double temperature = 0.7;
  std::string strategy = "sequential";
  int n = 0;
  std::string replay_dir;
  std::string budget;
  int max_turns = 0, max_evaluations = 0;
  int64_t max_tokens = 0;
  double target_speedup = 0, max_cost = 0;
  uint64_t seed = 0;
  std::string label, request_id;
  int trials = 0;
  bool watch = false;
  bool json = false;
};

absl::StatusOr<v1::JobSpec> SpecFromFlags(const SubmitOptions& o) {
  v1::JobSpec s;
  if (!o.job_file.empty()) {
    std::ifstream in(o.job_file);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", o.job_file));
    std::stringstream ss;
    ss << in.rdbuf();
    auto st = google::protobuf::util::JsonStringToMessage(ss.str(), &s);
    if (!st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(o.job_file, ": ", st.ToString()));
    }
    return s;
  }
  s.set_problem(o.problem);
  s.set_backend(o.backend == "cuda" ? v1::BACKEND_CUDA : v1::BACKEND_HOST);
  s.set_world_size(o.world_size);
  if (!o.dtype.empty()) {
    v1::Dtype d;
    std::string name = "DTYPE_" + o.dtype;
    for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (!v1::Dtype_Parse(name, &d)) {
      return absl::InvalidArgumentError(absl::StrCat("--dtype '", o.dtype, "' is unknown"));
    }
    s.set_dtype(d);
  }
  if (!o.size.empty()) s.mutable_size()->set_preset(o.size);
  auto* a = s.mutable_agent();
  a->set_kind(o.agent == "llm"      ? v1::AGENT_KIND_LLM
              : o.agent == "replay" ? v1::AGENT_KIND_REPLAY
                                    : v1::AGENT_KIND_SEARCH);
  if (o.agent == "llm") {
    a->mutable_llm()->set_provider_name(o.provider_name);
    a->mutable_llm()->set_model(o.model);
    if (!o.api_key_env.empty()) {
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
    a->mutable_llm()->set_temperature(o.temperature);
    a->mutable_strategy()->set_kind(o.strategy == "best_of_n" ? v1::STRATEGY_BEST_OF_N
                                    : o.strategy == "tree"    ? v1::STRATEGY_TREE
                                                              : v1::STRATEGY_SEQUENTIAL);
    a->mutable_strategy()->set_n(o.n);
  }
  if (o.agent == "replay") {
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
  ASSIGN_OR_RETURN(double wall, ParseDuration(o.budget));
  auto* b = s.mutable_budget();
  b->set_wall_seconds(wall);
  b->set_max_turns(o.max_turns);
  b->set_max_evaluations(o.max_evaluations);
  b->set_max_tokens(o.max_tokens);
  b->set_target_speedup(o.target_speedup);
  b->set_max_cost_usd(o.max_cost);
  s.set_seed(o.seed);
  s.set_label(o.label);
  s.mutable_eval()->set_trials(o.trials);
  return s;
}

int RunSubmit(const SubmitOptions& o) {
  auto remote = Remote::Connect(o.remote);
  if (!remote.ok()) return ReportStatus("submit", remote.status());
  auto spec = SpecFromFlags(o);
  if (!spec.ok()) return ReportStatus("submit", spec.status());
  v1::SubmitJobRequest req;
  *req.mutable_spec() = *spec;
  req.set_client_request_id(o.request_id);
  v1::Job job;
  auto ctx = remote->Context();
  grpc::Status st = remote->stub()->SubmitJob(ctx.get(), req, &job);
  if (!st.ok()) return ReportStatus("submit", RemoteError(*remote, st));
  if (o.json) {
    std::printf("%s\n", ToJsonText(job).c_str());
  } else {
    std::printf("%s\n", job.id().c_str());
  }
  std::fflush(stdout);
  if (o.watch) return RunWatch(*remote, job.id(), o.json);
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

  void Apply(const v1::Event& e) {
    elapsed_ms = std::max(elapsed_ms, e.elapsed_ms());
    if (e.has_state_changed()) {
      state = e.state_changed().state();
      reason = e.state_changed().reason();
    } else if (e.has_turn_started()) {
      turns = e.turn_started().index() + 1;
    } else if (e.has_evaluation_finished()) {
      const auto& f = e.evaluation_finished();
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
                       waiting.empty() ? "" : "  (waiting for an executor: " + waiting + ")");
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
          std::string line;
          google::protobuf::util::JsonPrintOptions o;
          (void)google::protobuf::util::MessageToJsonString(resp.event(), &line, o);
          std::printf("%s\n", line.c_str());
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
  std::string source;
  for (const auto& c : traj.candidates()) {
    if (c.sha256() == job.best_candidate_sha256()) source = c.source();
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
      if (c.sha256() == job.best_candidate_sha256()) *summary.add_candidates() = c;
    }
    *summary.mutable_best_curve() = traj.best_curve();
    std::printf("%s\n", ToJsonText(summary).c_str());
    return kExitOk;
  }
  PrintJob(job);
  if (job.best_candidate_sha256().empty()) {
    std::printf("\nno correct candidate yet\n");
    return kExitOk;
  }
  std::printf("\nbest candidate %s%s\n", job.best_candidate_sha256().c_str(),
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

int RunProblems(const RemoteOptions& ro, bool json) {
  auto remote = Remote::Connect(ro);
  if (!remote.ok()) return ReportStatus("problems", remote.status());
  v1::ListProblemsResponse resp;
  auto ctx = remote->Context();
  grpc::Status st = remote->stub()->ListProblems(ctx.get(), v1::ListProblemsRequest(), &resp);
  if (!st.ok()) return ReportStatus("problems", RemoteError(*remote, st));
  if (json) {
    std::printf("%s\n", ToJsonText(resp).c_str());
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

int RunExecutors(const RemoteOptions& ro, bool json) {
  auto remote = Remote::Connect(ro);
  if (!remote.ok()) return ReportStatus("executors", remote.status());
  v1::ListExecutorsResponse resp;
  auto ctx = remote->Context();
  grpc::Status st = remote->stub()->ListExecutors(ctx.get(), v1::ListExecutorsRequest(), &resp);
  if (!st.ok()) return ReportStatus("executors", RemoteError(*remote, st));
  if (json) {
    std::printf("%s\n", ToJsonText(resp).c_str());
    return kExitOk;
  }
  std::printf("%-24s %-8s %-9s %-9s %-5s %-10s %s\n", "EXECUTOR", "HEALTHY", "IN_FLIGHT",
              "COMPLETED", "GPUS", "BACKENDS", "LAST_ERROR");
  for (const auto& e : resp.executors()) {
    std::printf("%-24s %-8s %-9d %-9lld %-5d %-10s %s\n", e.address().c_str(),
                e.healthy() ? "yes" : "NO", e.in_flight(), static_cast<long long>(e.completed()),
                e.device().usable_gpus(), Backends(e.device().backends()).c_str(),
                e.last_error().empty() ? "-" : e.last_error().c_str());
  }
  return kExitOk;
}

}  // namespace

void RegisterRemote(CLI::App& app, int* exit_code) {
  {
    auto o = std::make_shared<SubmitOptions>();
    CLI::App* cmd = app.add_subcommand("submit", "Submit an optimization job to the orchestrator");
    o->remote.Add(cmd);
    cmd->add_option("--job-file", o->job_file, "JobSpec as proto3 JSON (other spec flags ignored)");
    cmd->add_option("--problem", o->problem, "Problem name")->capture_default_str();
    cmd->add_option("--backend", o->backend, "host | cuda")
        ->check(CLI::IsMember({"host", "cuda"}))
        ->capture_default_str();
    cmd->add_option("--world-size", o->world_size, "Ranks")->capture_default_str();
    cmd->add_option("--dtype", o->dtype, "f32 | f16 | bf16 | ... (default: the problem's)");
    cmd->add_option("--size", o->size, "Size preset")->capture_default_str();
    cmd->add_option("--agent", o->agent, "llm | search | replay")
        ->check(CLI::IsMember({"llm", "search", "replay"}))
        ->capture_default_str();
    cmd->add_option("--provider", o->provider_name,
                    "llm: one of the orchestrator's providers (its operator configures them "
                    "with pkforge-orchestrator --provider NAME=KIND,BASE_URL,KEY_ENV)");
    cmd->add_option("--model", o->model, "LLM model");
    cmd->add_option("--api-key-env", o->api_key_env,
                    "llm: environment variable (of this client) holding your own key for the "
                    "provider; accepted only where its operator allows client keys");
    cmd->add_option("--temperature", o->temperature, "LLM temperature");
    cmd->add_option("--strategy", o->strategy, "sequential | best_of_n | tree")
        ->check(CLI::IsMember({"sequential", "best_of_n", "tree"}));
    cmd->add_option("--n", o->n, "best_of_n: candidates per turn");
    cmd->add_option("--replay-dir", o->replay_dir,
                    "replay: local directory whose files are sent as the candidates");
    cmd->add_option("--budget", o->budget, "Wall-clock budget, e.g. 90s, 10m, 1h");
    cmd->add_option("--max-turns", o->max_turns, "Turn budget");
    cmd->add_option("--max-evaluations", o->max_evaluations, "Evaluation budget");
    cmd->add_option("--max-tokens", o->max_tokens, "Token budget");
    cmd->add_option("--target-speedup", o->target_speedup, "Stop once reached");
    cmd->add_option("--max-cost", o->max_cost, "Cost budget (USD)");
    cmd->add_option("--seed", o->seed, "Agent seed");
    cmd->add_option("--label", o->label, "Experiment label");
    cmd->add_option("--trials", o->trials, "Correctness trials per evaluation");
    cmd->add_option("--request-id", o->request_id, "Idempotency key");
    cmd->add_flag("--watch", o->watch, "Watch the job until it ends");
    cmd->add_flag("--json", o->json, "Print the job as JSON");
    cmd->callback([o, exit_code] { *exit_code = RunSubmit(*o); });
  }
  {
    auto ro = std::make_shared<RemoteOptions>();
    auto job = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("watch", "Follow a job live until it ends");
    cmd->add_option("job", *job, "Job id")->required();
    ro->Add(cmd);
    cmd->add_flag("--json", *json, "One JSON event per line");
    cmd->callback([ro, job, json, exit_code] {
      auto remote = Remote::Connect(*ro);
      *exit_code = remote.ok() ? RunWatch(*remote, *job, *json)
                               : ReportStatus("watch", remote.status());
    });
  }
  {
    auto ro = std::make_shared<RemoteOptions>();
    auto job = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("show", "Summary of a job and its best candidate");
    cmd->add_option("job", *job, "Job id")->required();
    ro->Add(cmd);
    cmd->add_option("--source-out", *out, "Write the best candidate's source to this file");
    cmd->add_flag("--json", *json, "JSON output");
    auto db = std::make_shared<std::string>();
    cmd->add_option("--db", *db, "Trajectory database file (offline, no server, read-only)");
    cmd->callback([=] { *exit_code = RunShow(*ro, *job, *json, *out, *db); });
  }
  {
    auto ro = std::make_shared<RemoteOptions>();
    auto job = std::make_shared<std::string>();
    auto reason = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("cancel", "Cancel a job");
    cmd->add_option("job", *job, "Job id")->required();
    ro->Add(cmd);
    cmd->add_option("--reason", *reason, "Why (recorded)");
    cmd->add_flag("--json", *json, "JSON output");
    cmd->callback([=] { *exit_code = RunCancel(*ro, *job, *reason, *json); });
  }
  {
    auto ro = std::make_shared<RemoteOptions>();
    auto json = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("problems", "Problems the executors offer");
    ro->Add(cmd);
    cmd->add_flag("--json", *json, "JSON output");
    cmd->callback([=] { *exit_code = RunProblems(*ro, *json); });
  }
  {
    auto ro = std::make_shared<RemoteOptions>();
    auto json = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("executors", "Executors and their health");
    ro->Add(cmd);
    cmd->add_flag("--json", *json, "JSON output");
    cmd->callback([=] { *exit_code = RunExecutors(*ro, *json); });
  }
}

}  // namespace pkforge::cli
