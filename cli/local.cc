// `pkforge local`: the main job on one machine with embedded defaults.
//
// Starts pkforge-executor and pkforge-orchestrator (found next to this
// binary) as child processes on loopback ports they pick themselves, keeps
// everything in --data-dir (SQLite database, compile cache, logs, the best
// source), submits one job, shows live progress, prints the result and a
// plateau summary, and stops both children cleanly: on completion, on
// Ctrl-C (the job is cancelled first; a second Ctrl-C stops at once) and, via
// PR_SET_PDEATHSIG, if this process dies.
//
// Choices made for the user are printed with the reason: the cuda backend
// when a GPU is usable (else host), the llm agent when a provider is
// configured (else the search agent).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/job_flags.h"
#include "cli/output.h"
#include "cli/remote.h"
#include "common/grpc_status.h"
#include "common/status.h"
#include "fmt/format.h"
#include "google/protobuf/util/json_util.h"
#include "pkforge/v1/executor.grpc.pb.h"

namespace pkforge::cli {
namespace {

namespace fs = std::filesystem;

struct LocalOptions {
  JobFlags job;  // shared with `pkforge submit` (cli/job_flags.h)
  std::string base_url;  // local only: the provider endpoint this run configures
  std::string data_dir = "pkforge-data";
  std::string output = "table";
};

bool GpuUsable() {
  return access("/dev/nvidiactl", F_OK) == 0 && access("/dev/nvidia0", F_OK) == 0;
}

// /dev/nvidiaN device nodes (the "auto" world size on cuda).
int GpuCount() {
  int n = 0;
  while (n < 64 && access(("/dev/nvidia" + std::to_string(n)).c_str(), F_OK) == 0) ++n;
  return n;
}

// One daemon child: stdout is read until its "listening" line, stderr goes
// to a log file.
struct Child {
  std::string name;
  pid_t pid = -1;
  int out_fd = -1;
  std::string log;

  ~Child() { Stop(10); }
  void Stop(int grace_s) {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    for (int i = 0; i < grace_s * 20; ++i) {
      if (waitpid(pid, nullptr, WNOHANG) == pid) {
        pid = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (pid > 0) {
      std::fprintf(stderr, "pkforge local: %s did not stop in %d s; killing it\n", name.c_str(), grace_s);
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      pid = -1;
    }
    if (out_fd >= 0) close(out_fd);
    out_fd = -1;
  }
};

absl::Status Spawn(const std::vector<std::string>& argv, const std::string& log_path, Child* c) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return ErrnoError("pipe", errno);
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return ErrnoError("open " + log_path, errno);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return ErrnoError("fork", errno);
  if (pid == 0) {
    // The daemons go down with us, whatever kills us.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    setpgid(0, 0);  // Ctrl-C reaches us, not them; we stop them in order
    dup2(out[1], 1);
    dup2(log_fd, 2);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(log_fd);
  c->pid = pid;
  c->out_fd = out[0];
  c->log = log_path;
  return absl::OkStatus();
}

// Reads the child's stdout until a line starting with `prefix`; returns the
// rest of that line.
absl::StatusOr<std::string> AwaitLine(Child* c, const std::string& prefix, int timeout_s) {
  std::string buf;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  fcntl(c->out_fd, F_SETFL, O_NONBLOCK);
  while (std::chrono::steady_clock::now() < deadline) {
    char tmp[512];
    const ssize_t n = read(c->out_fd, tmp, sizeof tmp);
    if (n > 0) {
      buf.append(tmp, static_cast<size_t>(n));
      size_t pos;
      while ((pos = buf.find('\n')) != std::string::npos) {
        std::string line = buf.substr(0, pos);
        buf.erase(0, pos + 1);
        if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
      }
      continue;
    }
    if (n == 0 || waitpid(c->pid, nullptr, WNOHANG) == c->pid) {
      c->pid = -1;
      return absl::UnavailableError(absl::StrCat(c->name, " exited during start-up; see ", c->log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::UnavailableError(absl::StrCat(c->name, " did not start within ", timeout_s, " s; see ", c->log));
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  return s;
}

// The orchestrator's command line. The local user is its operator: the LLM
// flags become its one provider ("local"), the replay directory its replay
// root.
std::vector<std::string> LocalOrchestratorArgv(const LocalOptions& lo, const std::string& agent,
                                               const std::string& orchestrator_exe,
                                               const fs::path& data,
                                               const std::string& executor_address) {
  const JobFlags& o = lo.job;
  std::vector<std::string> orch_argv = {orchestrator_exe, "--listen", "127.0.0.1:0", "--db",
                                        (data / "pkforge.db").string(), "--executor",
                                        executor_address};
  if (agent == "llm") {
    orch_argv.push_back("--provider");
    orch_argv.push_back(absl::StrCat("local=", o.provider == "anthropic" ? "anthropic" : "openai", ",",
                                     lo.base_url.empty() ? (o.provider == "anthropic"
                                                               ? "https://api.anthropic.com"
                                                               : "https://api.openai.com/v1")
                                                        : lo.base_url,
                                     ",", o.api_key_env));
  }
  if (agent == "replay") {
    orch_argv.push_back("--replay-root");
    orch_argv.push_back(fs::absolute(o.replay_dir).string());
  }
  return orch_argv;
}

// What `pkforge local` chooses for the user, each with the reason it prints:
// the backend (cuda when a GPU is usable), the world size, the agent (llm
// when a provider is configured and its key is set, else search).
struct LocalChoices {
  std::string backend, why_backend;
  int world_size = 1;
  std::string why_world, agent, why_agent;
};

LocalChoices ChooseForLocal(const JobFlags& o) {
  const bool gpu = GpuUsable();
  const int gpus = gpu ? std::max(1, GpuCount()) : 0;
  const std::string backend = o.ResolvedBackend(gpus);
  std::string why_backend = o.backend != "auto" ? "as requested"
                            : gpu               ? "a GPU is usable"
                                                : "no usable GPU (/dev/nvidia0) here";
  const int world_size = o.ResolvedWorldSize(backend, gpus);
  const std::string why_world = o.world_size > 0 ? "as requested"
                                : backend == "host"
                                    ? "the host default: ranks as processes, so the job is multi-rank"
                                    : "every usable GPU here";
  std::string agent = o.agent;
  std::string why_agent = "as requested";
  const bool provider_configured = !o.model.empty() && !o.api_key_env.empty();
  if (agent == "auto") {
    if (provider_configured && getenv(o.api_key_env.c_str()) != nullptr) {
      agent = "llm";
      why_agent = absl::StrCat("provider ", o.provider.empty() ? "openai" : o.provider, ", model ", o.model);
    } else {
      agent = "search";
      why_agent = provider_configured
                      ? absl::StrCat("$", o.api_key_env, " is not set, so no LLM can be called")
                      : "no LLM provider configured (--provider --model --api-key-env)";
    }
  }
  return LocalChoices{backend, why_backend, world_size, why_world, agent, why_agent};
}

// The job's result is the orchestrator's final fresh re-measurement of the
// chosen candidate (Job.final_*, orchestrator/final_measurement.h): its full
// result comes with the trajectory, beside the best of the search. Writes the
// chosen source under <data>/best/ (*best_path) and returns the
// re-measurement's result, when there is one.
std::optional<v1::EvaluationResult> FetchChosen(const Remote& remote, const v1::Job& job,
                                                const std::string& backend, const fs::path& data,
                                                std::string* best_path_out) {
  std::error_code ec;
  std::string& best_path = *best_path_out;
  std::optional<v1::EvaluationResult> remeasured;
  const std::string& chosen = job.final_candidate_sha256().empty() ? job.best_candidate_sha256()
                                                                   : job.final_candidate_sha256();
  if (!chosen.empty()) {
    v1::GetTrajectoryRequest t;
    t.set_job_id(job.id());
    t.set_include_sources(true);
    t.set_include_results(true);
    v1::Trajectory traj;
    auto ctx = remote.Context(60);
    if (remote.stub()->GetTrajectory(ctx.get(), t, &traj).ok()) {
      for (const auto& c : traj.candidates()) {
        if (c.sha256() != chosen) continue;
        fs::create_directories(data / "best", ec);
        best_path = (data / "best" / (job.id() + (backend == "cuda" ? ".cu" : ".cc"))).string();
        std::ofstream(best_path) << c.source();
      }
      for (const auto& e : traj.evaluations()) {
        if (e.final_measurement() && e.id() == job.final_evaluation_id()) remeasured = e.result();
      }
    }
  }
  return remeasured;
}

// The end of `pkforge local`: the job's result as JSON (--json) or as text:
// the re-measured speedup and the search's best, where the best source was
// written, the plateau summary and how to look further.
struct LocalResult {
  const v1::Job& job;
  const v1::PlateauReport& plateau;
  const std::string& best_path;
  const std::optional<v1::EvaluationResult>& remeasured;
  const std::string& backend;
  const std::string& host_note;
  const fs::path& data;
};

void PrintLocalResult(const LocalResult& r, bool json) {
  const v1::Job& job = r.job;
  const v1::PlateauReport& plateau = r.plateau;
  const std::string& best_path = r.best_path;
  const std::optional<v1::EvaluationResult>& remeasured = r.remeasured;
  const std::string& backend = r.backend;
  const std::string& host_note = r.host_note;
  const fs::path& data = r.data;
  if (json) {
    nlohmann::json out = {{"job", ProtoJsonValue(job)},
                          {"best_source", best_path},
                          {"plateau", ProtoJsonValue(plateau)},
                          {"timings", backend == "host" ? "cpu" : "gpu"}};
    if (job.has_best_speedup() && job.best_roofline_fraction() > 1.0)
      out["roofline_suspect"] = kSuspectRoofline;
    if (remeasured) {
      out["remeasured"] = ProtoJsonValue(*remeasured);
    } else if (!job.final_evaluation_id().empty()) {
      out["remeasured"] = {{"error", "the re-measurement " + job.final_evaluation_id() +
                                         " has no result"}};
    }
    std::printf("%s\n", DumpJson(out).c_str());
  } else {
    std::printf("\n== result of job %s (%s) ==\n", job.id().c_str(), v1::JobState_Name(job.state()).c_str());
    std::printf("  evaluations %d in %.1f s (%s)\n", job.evaluations(), job.elapsed_ms() / 1e3,
                job.stop_reason().empty() ? "-" : job.stop_reason().c_str());
    if (job.has_final_speedup() || job.has_best_speedup()) {
      if (job.has_final_speedup()) {
        std::printf("  best speedup %.3fx over the reference, %s (re-measured: one fresh evaluation "
                    "of the best candidate)\n",
                    job.final_speedup(), RooflineText(job.final_roofline_fraction()).c_str());
      } else {
        std::printf("  no re-measured result (%s)\n",
                    job.final_evaluation_id().empty()
                        ? "the job ended before it"
                        : ("the re-measurement ended " +
                           v1::EvaluationResult::Status_Name(job.final_status()))
                              .c_str());
      }
      if (job.has_best_speedup()) {
        std::printf("  during the search it measured %.3fx, %s (the best of many measurements)\n",
                    job.best_speedup(), RooflineText(job.best_roofline_fraction()).c_str());
      }
      if (backend == "host") std::printf("  (%s)\n", host_note.c_str());
      if (!best_path.empty()) std::printf("  best source %s\n", best_path.c_str());
    } else {
      std::printf("  no correct candidate\n");
    }
    if (job.other_settings_evaluations() > 0) {
      // Successive halving times its rungs with other iteration counts than
      // the job's: those results are kept off the best-so-far axis.
      std::printf("  note: %d evaluation(s) of the search ran at other settings (successive-halving "
                  "rungs timed with other iteration counts, best %s): not comparable, so kept out "
                  "of the best-so-far/plateau figures\n",
                  job.other_settings_evaluations(),
                  job.has_other_settings_best_speedup()
                      ? fmt::format("{:.3f}x", job.other_settings_best_speedup()).c_str()
                      : "-");
    }
    if (plateau.jobs_size() > 0) {
      const auto& jp = plateau.jobs(0);
      std::string line = "  plateau: ";
      if (jp.has_first_correct_s()) line += fmt::format("first correct at {:.1f} s; ", jp.first_correct_s());
      for (const auto& f : jp.time_to_fraction())
        line += fmt::format("{:.0f}% of final at {:.1f} s; ", 100 * f.fraction(), f.t_s());
      if (jp.has_plateau_onset_s())
        line += fmt::format("no further gain above {:.0f}% after {:.1f} s", 100 * plateau.epsilon(),
                            jp.plateau_onset_s());
      else
        line += "no plateau detected (still improving too close to the end to tell)";
      std::printf("%s\n", line.c_str());
    }
    std::printf("  database %s (try: pkforge trajectory %s --db %s)\n", (data / "pkforge.db").string().c_str(),
                job.id().c_str(), (data / "pkforge.db").string().c_str());
  }
}

// Long (~150 lines): the whole `pkforge local` session in order (choices
// said out loud, the embedded executor and orchestrator, the job, Ctrl-C,
// the watch, the result); each step is a few lines or a function of its own.
int RunLocal(const LocalOptions& lo) {
  const JobFlags& o = lo.job;
  const bool json = lo.output == "json";
  if (!o.provider.empty() && o.provider != "openai" && o.provider != "anthropic") {
    return ReportStatus("local", absl::InvalidArgumentError(absl::StrCat(
                                     "--provider '", o.provider, "': openai or anthropic")));
  }
  auto budget = ParseDuration(o.budget);
  if (!budget.ok()) return ReportStatus("local", budget.status());
  std::error_code ec;
  const fs::path data = fs::absolute(lo.data_dir, ec);
  fs::create_directories(data / "logs", ec);
  if (ec) {
    return ReportStatus("local", absl::UnavailableError(absl::StrCat(
                                     "creating data directory ", data.string(), ": ", ec.message())));
  }
  char self[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  const fs::path bin = fs::path(n > 0 ? std::string(self, static_cast<size_t>(n)) : "").parent_path();
  const std::string executor_exe = (bin / "pkforge-executor").string();
  const std::string orchestrator_exe = (bin / "pkforge-orchestrator").string();
  for (const auto& exe : {executor_exe, orchestrator_exe})
    if (access(exe.c_str(), X_OK) != 0)
      return ReportStatus("local", absl::UnavailableError(absl::StrCat(exe, " not found: build it first")));

  // Choices, each said out loud.
  const LocalChoices choice = ChooseForLocal(o);
  const std::string& backend = choice.backend;
  const int world_size = choice.world_size;
  const std::string& agent = choice.agent;
  // Host timings are CPU timings: say so before anything else (and again
  // with the result), since nobody should read them as GPU numbers.
  const std::string host_note =
      "host backend: ranks are CPU processes and every timing is a CPU timing (development "
      "only; speedups say nothing about GPUs)";
  if (!json) {
    std::printf("pkforge local: data in %s\n", data.string().c_str());
    std::printf("pkforge local: backend %s (%s), world size %d (%s), agent %s (%s)\n",
                backend.c_str(), choice.why_backend.c_str(), world_size, choice.why_world.c_str(),
                agent.c_str(), choice.why_agent.c_str());
    if (backend == "host") std::printf("pkforge local: %s\n", host_note.c_str());
    std::fflush(stdout);
  } else if (backend == "host") {
    std::fprintf(stderr, "pkforge local: %s\n", host_note.c_str());
  }

  // Signals are handled by a thread of ours (Ctrl-C cancels the job).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  Child executor{"pkforge-executor"}, orchestrator{"pkforge-orchestrator"};
  absl::Status st = Spawn({executor_exe, "--listen", "127.0.0.1:0", "--data-dir", (data / "executor").string(),
                           "--gpus", backend == "cuda" ? "all" : "none"},
                          (data / "logs" / "executor.log").string(), &executor);
  if (!st.ok()) return ReportStatus("local", st);
  auto exec_addr = AwaitLine(&executor, "pkforge-executor listening on ", 180);
  if (!exec_addr.ok()) return ReportStatus("local", exec_addr.status());
  const std::vector<std::string> orch_argv =
      LocalOrchestratorArgv(lo, agent, orchestrator_exe, data, Trim(*exec_addr));
  st = Spawn(orch_argv, (data / "logs" / "orchestrator.log").string(), &orchestrator);
  if (!st.ok()) return ReportStatus("local", st);
  auto orch_addr = AwaitLine(&orchestrator, "LISTENING ", 60);
  if (!orch_addr.ok()) return ReportStatus("local", orch_addr.status());
  if (!json)
    std::printf("pkforge local: executor %s, orchestrator %s (logs in %s)\n", Trim(*exec_addr).c_str(),
                Trim(*orch_addr).c_str(), (data / "logs").string().c_str());

  RemoteOptions ro;
  ro.orchestrator = Trim(*orch_addr);
  auto remote = Remote::Connect(ro);
  if (!remote.ok()) return ReportStatus("local", remote.status());

  auto built = JobSpecFromFlags(o, backend, world_size, agent, "local");
  if (!built.ok()) return ReportStatus("local", built.status());
  v1::JobSpec spec = *std::move(built);
  if (o.label.empty()) spec.set_label("local");
  if (agent == "replay") spec.mutable_agent()->set_replay_dir(fs::absolute(o.replay_dir).string());

  v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  v1::Job job;
  {
    auto ctx = remote->Context();
    grpc::Status gs = remote->stub()->SubmitJob(ctx.get(), req, &job);
    if (!gs.ok()) return ReportStatus("local", RemoteError(*remote, gs));
  }
  if (!json) std::printf("pkforge local: job %s\n", job.id().c_str());
  std::fflush(stdout);

  // Ctrl-C: cancel the job (the watch then ends with it); twice: stop now.
  std::atomic<bool> done{false};
  std::thread signals([&] {
    int interrupts = 0;
    while (!done.load()) {
      timespec ts{0, 200'000'000};
      const int sig = sigtimedwait(&set, nullptr, &ts);
      if (sig <= 0) continue;
      if (++interrupts == 1) {
        std::fprintf(stderr, "\npkforge local: cancelling job %s (Ctrl-C again to stop at once)\n", job.id().c_str());
        v1::CancelJobRequest c;
        c.set_job_id(job.id());
        c.set_reason("interrupted by the user (Ctrl-C)");
        v1::Job ignored;
        auto ctx = remote->Context(10);
        (void)remote->stub()->CancelJob(ctx.get(), c, &ignored);
      } else {
        std::fprintf(stderr, "pkforge local: stopping now\n");
        executor.Stop(2);
        orchestrator.Stop(2);
        _exit(kExitFailed);
      }
    }
  });
  // With --json, stdout carries only the final JSON: progress goes to stderr.
  const int saved_stdout = json ? dup(1) : -1;
  if (json) dup2(2, 1);
  const int watch_rc = RunWatch(*remote, job.id(), /*json=*/false);
  std::fflush(stdout);
  if (json) {
    dup2(saved_stdout, 1);
    close(saved_stdout);
  }
  done = true;
  signals.join();

  // The result: best speedup, roofline, the best source, a plateau summary.
  int rc = watch_rc;
  {
    v1::GetJobRequest g;
    g.set_job_id(job.id());
    auto ctx = remote->Context();
    grpc::Status gs = remote->stub()->GetJob(ctx.get(), g, &job);
    if (!gs.ok()) rc = ReportStatus("local", RemoteError(*remote, gs));
  }
  std::string best_path;
  const std::optional<v1::EvaluationResult> remeasured =
      FetchChosen(*remote, job, backend, data, &best_path);
  v1::PlateauReport plateau;
  {
    v1::AnalyzePlateauRequest p;
    p.mutable_jobs()->add_job_ids(job.id());
    auto ctx = remote->Context(60);
    (void)remote->stub()->AnalyzePlateau(ctx.get(), p, &plateau);
  }
  PrintLocalResult({job, plateau, best_path, remeasured, backend, host_note, data}, json);
  std::fflush(stdout);
  orchestrator.Stop(30);
  executor.Stop(30);
  return rc;
}

}  // namespace

void RegisterLocal(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<LocalOptions>();
  CLI::App* cmd = app.add_subcommand("local", "Run an optimization job on this machine");
  opts->job.Add(cmd, "openai | anthropic (the provider this run configures)");
  cmd->add_option("--base-url", opts->base_url, "Provider endpoint (OpenAI-compatible or Anthropic)");
  cmd->add_option("--data-dir", opts->data_dir, "Where the database, cache, logs and sources go")
      ->capture_default_str();
  AddOutputOption(cmd, &opts->output, {"table", "json"});
  cmd->callback([opts, exit_code] { *exit_code = RunLocal(*opts); });
}

}  // namespace pkforge::cli
