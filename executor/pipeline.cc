#include "executor/pipeline.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/clock.h"
#include "common/files.h"
#include "common/log_text.h"
#include "common/sha256.h"
#include "common/status.h"
#include "common/utf8.h"
#include "executor/gpu_health.h"
#include "google/protobuf/util/json_util.h"
#include "kernels/harness/eval_validation.h"
#include "kernels/harness/problem.h"
#include "kernels/harness/problem_info.h"
#include "kernels/harness/result_frame.h"
#include "spdlog/spdlog.h"

namespace pkforge::executor {
namespace fs = std::filesystem;
using Result = v1::EvaluationResult;

namespace {

// What a sandboxed process printed, for a proto3 string: its last n bytes,
// bytes that are not UTF-8 (a candidate's, or a cut through a sequence)
// replaced by U+FFFD.
std::string Tail(const std::string& s, size_t n) {
  if (s.size() <= n) return ValidUtf8(s);
  return absl::StrCat("[... ", s.size() - n, " bytes cut ...]\n",
                      ValidUtf8(std::string_view(s).substr(s.size() - n)));
}

int64_t WallMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const char* StatusLabel(Result::Status s) {
  switch (s) {
    case Result::OK: return "OK";
    case Result::COMPILE_ERROR: return "COMPILE_ERROR";
    case Result::SETUP_ERROR: return "SETUP_ERROR";
    case Result::RUNTIME_ERROR: return "RUNTIME_ERROR";
    case Result::TIMEOUT: return "TIMEOUT";
    case Result::WRONG_OUTPUT: return "WRONG_OUTPUT";
    case Result::CHEAT_DETECTED: return "CHEAT_DETECTED";
    case Result::HARNESS_ERROR: return "HARNESS_ERROR";
    default: return "UNSPECIFIED";
  }
}

}  // namespace

void Cancellation::Cancel() {
  cancelled_.store(true);
  std::lock_guard lock(mu_);
  if (process_ != nullptr) process_->Kill();
}

void Cancellation::SetProcess(sandbox::SandboxProcess* process) {
  std::lock_guard lock(mu_);
  process_ = process;
  if (process_ != nullptr && cancelled_.load()) process_->Kill();
}

Pipeline::Pipeline(const Runtime* runtime, Compiler* compiler, DeviceQueue* queue,
                   Devices* devices, Metrics* metrics, std::string scratch_root)
    : runtime_(runtime),
      compiler_(compiler),
      queue_(queue),
      devices_(devices),
      metrics_(metrics),
      scratch_root_(std::move(scratch_root)) {}

absl::Status Pipeline::Validate(const v1::EvaluateRequest& r) const {
  const ExecutorConfig& c = runtime_->config();
  // The rules the orchestrator checks jobs with (kernels/harness/eval_validation.h),
  // with this executor's limits; what depends on its state follows.
  const bool cuda = r.backend() == v1::BACKEND_CUDA;
  kernels::EvalLimits limits{.max_host_world_size = c.max_host_world_size,
                             .max_trials = c.max_trials,
                             .max_iters = c.max_iters,
                             .max_timeout_s = c.max_timeout_s,
                             .host_memory_bytes = c.run_memory_mb << 20};
  if (cuda) {
    const v1::DeviceInfo device = devices_->Describe(*queue_);
    for (const auto& g : device.gpus())
      if (g.memory_bytes() > 0 && (limits.gpu_memory_bytes == 0 || g.memory_bytes() < limits.gpu_memory_bytes))
        limits.gpu_memory_bytes = g.memory_bytes();
  }
  RETURN_IF_ERROR(kernels::ValidateEvaluation(r, limits));
  if (cuda && !devices_->cuda_available())
    return absl::FailedPreconditionError(
        "backend: cuda is not available on this executor (no usable GPU); use BACKEND_HOST");
  if (cuda && !compiler_->cuda_available())
    return absl::FailedPreconditionError("backend: cuda needs nvcc, which this executor lacks");
  if (cuda && r.world_size() > queue_->usable_gpus())
    return absl::FailedPreconditionError(absl::StrCat("world_size: ", r.world_size(),
                                                      " GPUs asked, this executor has ",
                                                      queue_->usable_gpus(), " usable"));
  if (r.source().empty()) return absl::InvalidArgumentError("source: empty");
  if (static_cast<int64_t>(r.source().size()) > c.max_source_bytes)
    return absl::InvalidArgumentError(absl::StrCat("source: ", r.source().size(),
                                                   " bytes exceeds the limit of ",
                                                   c.max_source_bytes));
  if (!IsValidUtf8(r.source())) return absl::InvalidArgumentError("source: not valid UTF-8");
  RETURN_IF_ERROR(compiler_->ValidateFlags(r.backend(), {r.extra_flags().begin(), r.extra_flags().end()}));
  if (r.sanitize() != v1::SANITIZER_NONE && c.sanitizer_path.empty())
    return absl::FailedPreconditionError("sanitize: compute-sanitizer is not installed on this executor");
  if (r.profile() && c.ncu_path.empty())
    return absl::FailedPreconditionError("profile: ncu is not installed on this executor");
  if (r.client_tag().size() > 256)
    return absl::InvalidArgumentError("client_tag: longer than 256 bytes");
  // The tag is logged: a newline in it would forge a line of the log.
  if (auto ctl = FirstControlCharacter(r.client_tag()))
    return absl::InvalidArgumentError(absl::StrFormat(
        "client_tag: control character U+%04X at byte %d (one line of printable text expected)",
        ctl->code_point, ctl->offset));
  return absl::OkStatus();
}

std::vector<std::string> Pipeline::LaunchArgv(const v1::EvaluateRequest& r,
                                              const std::string& artifact,
                                              bool correctness_only) const {
  const ExecutorConfig& c = runtime_->config();
  const kernels::Problem& p = **kernels::FindProblem(r.problem());
  const pkf_dtype dtype = *kernels::FromProtoDtype(p, r.dtype());
  const double timeout = r.timeout_s() > 0 ? r.timeout_s() : c.default_timeout_s;
  std::vector<std::string> argv = {
      c.worker_path, "launch", "--json",
      "--problem", r.problem(),
      "--backend", r.backend() == v1::BACKEND_CUDA ? "cuda" : "host",
      "--world-size", std::to_string(r.world_size()),
      "--dtype", std::string(kernels::DtypeName(dtype)),
      "--size", *kernels::SizeSpecToString(p, r.size()),
      "--timeout", absl::StrCat(timeout)};
  // Host candidates write only beneath these (containment.h confine_writes):
  // the sandbox's private tmpfs mounts (docs/design.md §6). Without the
  // sandbox they would be the host's, shared with everything else: none.
  if (!c.unsafe_no_sandbox)
    argv.insert(argv.end(), {"--candidate-writable", "/tmp", "--candidate-writable", "/dev/shm"});
  // Hidden shapes (issue #17 item 5): the judge draws the dims itself.
  if (r.hidden_shapes()) argv.push_back("--hidden-shapes");
  if (r.precise_timing()) argv.push_back("--precise-timing");
  if (correctness_only) {
    argv.insert(argv.end(), {"--trials", "1", "--skip-timing"});
  } else {
    if (r.trials() > 0) argv.insert(argv.end(), {"--trials", std::to_string(r.trials())});
    if (r.warmup_iters() > 0) argv.insert(argv.end(), {"--warmup", std::to_string(r.warmup_iters())});
    if (r.timed_iters() > 0) argv.insert(argv.end(), {"--iters", std::to_string(r.timed_iters())});
    if (r.skip_timing()) argv.push_back("--skip-timing");
    if (r.size_ladder_size() > 0)
      argv.insert(argv.end(), {"--sizes", absl::StrJoin(r.size_ladder(), ",")});
  }
  if (r.backend() == v1::BACKEND_CUDA) {
    // The roofline uses this executor's measured ceilings.
    const v1::DeviceInfo info = devices_->Describe(*queue_);
    if (info.ceilings().source() != "table") {
      if (info.ceilings().hbm_gbps() > 0)
        argv.insert(argv.end(), {"--hbm-gbps", absl::StrCat(info.ceilings().hbm_gbps())});
      if (info.ceilings().peer_gbps() > 0)
        argv.insert(argv.end(), {"--link-gbps", absl::StrCat(info.ceilings().peer_gbps())});
      if (dtype != PKF_F32 && info.ceilings().bf16_tflops() > 0)
        argv.insert(argv.end(), {"--tflops", absl::StrCat(info.ceilings().bf16_tflops())});
    }
  }
  argv.push_back(artifact);
  return argv;
}

Result Pipeline::RunWorker(const v1::EvaluateRequest& r, const std::string& scratch,
                           const std::string& artifact, const std::vector<int>& gpus,
                           Cancellation* cancel) {
  // A fault of the trusted side (judge, reference ranks) is never the
  // candidate's doing (docs/threat-model.md): retried once, then reported as
  // HARNESS_ERROR.
  Result result = RunWorkerOnce(r, scratch, artifact, gpus, cancel);
  if (result.status() == Result::HARNESS_ERROR && !cancel->cancelled()) {
    spdlog::warn("evaluation of {} on GPUs [{}]: harness error, retrying once: {}", r.problem(),
                 absl::StrJoin(gpus, ","), result.message());
    Result again = RunWorkerOnce(r, scratch, artifact, gpus, cancel);
    if (again.status() == Result::HARNESS_ERROR)
      again.add_flags(absl::StrCat("harness error on the first attempt too: ", result.message()));
    else
      again.add_flags(absl::StrCat("retried after a harness error: ", result.message()));
    return again;
  }
  return result;
}

Result Pipeline::RunWorkerOnce(const v1::EvaluateRequest& r, const std::string& scratch,
                               const std::string& artifact, const std::vector<int>& gpus,
                               Cancellation* cancel) {
  const ExecutorConfig& c = runtime_->config();
  const double timeout = r.timeout_s() > 0 ? r.timeout_s() : c.default_timeout_s;
  // The judge bounds every phase itself; this deadline is the backstop for a
  // judge that cannot (4 phases, plus start-up), once per size of a ladder.
  const int64_t deadline_ms =
      static_cast<int64_t>((4 * timeout + 30) * 1000) * (1 + r.size_ladder_size());
  Result result;
  auto harness_error = [&](const std::string& why) {
    result.set_status(Result::HARNESS_ERROR);
    result.set_message(why);
    auto* f = result.add_failures();
    f->set_rank(-1);
    f->set_phase(v1::PHASE_SETUP);
    f->set_error(why);
    return result;
  };
  // The result key travels on the judge's stdin, read before any rank exists
  // (kernels/harness/result_frame.h).
  const std::string key = kernels::NewResultKey();
  int key_pipe[2];
  if (pipe2(key_pipe, O_CLOEXEC) != 0)
    return harness_error(absl::StrCat("pipe for the result key: ", strerror(errno)));
  const std::string line = key + "\n";
  const bool wrote = write(key_pipe[1], line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(key_pipe[1]);
  if (!wrote) {
    close(key_pipe[0]);
    return harness_error("writing the result key failed");
  }
  std::vector<std::string> argv = LaunchArgv(r, artifact, false);
  argv.insert(argv.begin() + 2, "--result-key-stdin");
  sandbox::SandboxPolicy policy = runtime_->CandidatePolicy(scratch, gpus, deadline_ms);
  policy.stdin_fd = key_pipe[0];
  auto spawned = runtime_->sandbox().Spawn(argv, policy);
  close(key_pipe[0]);
  if (!spawned.ok()) {
    result.set_status(Result::SETUP_ERROR);
    result.set_message(absl::StrCat("the sandbox could not start the worker: ", spawned.status().message()));
    auto* f = result.add_failures();
    f->set_rank(-1);
    f->set_phase(v1::PHASE_SETUP);
    f->set_error(std::string(spawned.status().message()));
    return result;
  }
  cancel->SetProcess(spawned->get());
  auto waited = (*spawned)->Wait();
  cancel->SetProcess(nullptr);
  if (!waited.ok()) {
    result.set_status(Result::RUNTIME_ERROR);
    result.set_message(absl::StrCat("waiting for the worker failed: ", waited.status().message()));
    return result;
  }
  const sandbox::SandboxResult& sr = *waited;
  // Exactly one authenticated frame and nothing else on the channel.
  const bool judge_exited = !sr.timed_out && !sr.oom_killed && sr.term_signal == 0 &&
                            (sr.exit_code == 0 || sr.exit_code == 1);
  if (judge_exited) {
    auto json = kernels::ParseFramedResult(sr.stdout_data, key, sr.stdout_truncated);
    if (!json.ok()) {
      // Only the judge holds the channel and the key: whatever broke the
      // frame broke the harness (the candidate cannot reach either).
      result = Result();
      harness_error(std::string(json.status().message()));
      result.mutable_failures(0)->set_stderr_tail(Tail(sr.stderr_data, 2000));
      return result;
    }
    google::protobuf::util::JsonParseOptions opts;
    opts.ignore_unknown_fields = true;
    Result parsed;
    if (!google::protobuf::util::JsonStringToMessage(*json, &parsed, opts).ok() ||
        parsed.status() == Result::STATUS_UNSPECIFIED)
      return harness_error("result channel: the judge's frame does not hold a result");
    if (!sr.enforcement.empty()) parsed.add_flags(absl::StrCat("sandbox: ", sr.enforcement));
    return parsed;
  }
  // No result from the judge: it was killed (deadline, memory) or refused.
  const std::string err_tail = Tail(sr.stderr_data, 4000);
  auto* f = result.add_failures();
  f->set_rank(-1);
  f->set_exit_code(sr.exit_code);
  f->set_signal(sr.term_signal);
  f->set_stderr_tail(err_tail);
  if (sr.timed_out) {
    result.set_status(Result::TIMEOUT);
    result.set_message(absl::StrCat("the evaluation exceeded the executor's deadline of ",
                                    deadline_ms / 1000, " s and was killed"));
    result.mutable_timeout()->set_limit_s(deadline_ms / 1000.0);
    result.mutable_timeout()->set_phase(v1::PHASE_UNSPECIFIED);
    f->set_error("deadline");
  } else if (sr.oom_killed) {
    result.set_status(Result::RUNTIME_ERROR);
    result.set_message(absl::StrCat("the evaluation exceeded its memory limit of ",
                                    c.run_memory_mb, " MiB and was killed"));
    f->set_error("out of memory");
  } else if (sr.exit_code == 2) {
    result.set_status(Result::SETUP_ERROR);
    result.set_message(absl::StrCat("the worker refused the evaluation: ", Tail(sr.stderr_data, 500)));
    f->set_phase(v1::PHASE_SETUP);
    f->set_error(Tail(sr.stderr_data, 500));
  } else {
    result.set_status(Result::HARNESS_ERROR);
    result.set_message(absl::StrCat("the judge ended without a result (exit ", sr.exit_code,
                                    ", signal ", sr.term_signal, ")"));
    f->set_error("judge ended without a result");
  }
  return result;
}

void Pipeline::Profile(const v1::EvaluateRequest& r, const std::string& scratch,
                       const std::string& artifact, const std::vector<int>& gpus,
                       Cancellation* cancel, Result* result) {
  const ExecutorConfig& c = runtime_->config();
  v1::ProfileSummary* prof = result->mutable_profile();
  prof->set_tool("ncu");
  const double timeout = r.timeout_s() > 0 ? r.timeout_s() : c.default_timeout_s;
  std::vector<std::string> metrics = {
      "gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
      "sm__warps_active.avg.pct_of_peak_sustained_active",
      "sm__throughput.avg.pct_of_peak_sustained_elapsed"};
  if (r.world_size() > 1) metrics.push_back("nvltx__bytes.sum");
  // Only the candidate's kernels: the candidate rank brackets its calls in
  // the NVTX range "pkforge_candidate" (reference ranks open
  // "pkforge_reference", which the filter leaves out).
  std::vector<std::string> argv = {c.ncu_path, "--target-processes", "all", "--nvtx",
                                   "--nvtx-include", "pkforge_candidate/", "--csv", "--page",
                                   "raw", "--metrics", absl::StrJoin(metrics, ","),
                                   "--launch-count", "200"};
  std::vector<std::string> launch = LaunchArgv(r, artifact, /*correctness_only=*/true);
  // Profiling replays kernels many times: give every phase more time.
  for (size_t i = 0; i + 1 < launch.size(); ++i)
    if (launch[i] == "--timeout") launch[i + 1] = absl::StrCat(timeout * 10);
  argv.insert(argv.end(), launch.begin(), launch.end());
  sandbox::SandboxPolicy policy = runtime_->CandidatePolicy(scratch, gpus, static_cast<int64_t>((40 * timeout + 60) * 1000));
  policy.allow_perf_events = true;
  auto spawned = runtime_->sandbox().Spawn(argv, policy);
  if (!spawned.ok()) {
    prof->set_error(absl::StrCat("could not start ncu: ", spawned.status().message()));
    return;
  }
  cancel->SetProcess(spawned->get());
  auto waited = (*spawned)->Wait();
  cancel->SetProcess(nullptr);
  if (!waited.ok()) {
    prof->set_error(std::string(waited.status().message()));
    return;
  }
  // CSV: a header row, a units row, one row per profiled kernel launch.
  std::vector<std::vector<std::string>> rows;
  for (absl::string_view line : absl::StrSplit(waited->stdout_data, '\n')) {
    if (!absl::StartsWith(line, "\"")) continue;
    std::vector<std::string> cells;
    for (absl::string_view cell : absl::StrSplit(line, "\",\""))
      cells.emplace_back(absl::StripSuffix(absl::StripPrefix(absl::StripAsciiWhitespace(cell), "\""), "\""));
    rows.push_back(std::move(cells));
  }
  if (rows.size() < 2) {
    prof->set_error(absl::StrCat("ncu produced no kernel rows (exit ", waited->exit_code, "): ",
                                 Tail(waited->stderr_data + waited->stdout_data, 1500)));
    return;
  }
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < rows[0].size(); ++i) col[rows[0][i]] = i;
  auto cell = [&](const std::vector<std::string>& row, const std::string& name) -> double {
    auto it = col.find(name);
    if (it == col.end() || it->second >= row.size()) return 0;
    std::string v = row[it->second];
    v.erase(std::remove(v.begin(), v.end(), ','), v.end());
    double d = 0;
    return absl::SimpleAtod(v, &d) ? d : 0;
  };
  double time_scale_us = 1e-3;  // ns by default
  if (auto it = col.find("gpu__time_duration.sum"); it != col.end() && it->second < rows[1].size()) {
    const std::string& unit = rows[1][it->second];
    if (unit == "usecond") time_scale_us = 1;
    else if (unit == "msecond") time_scale_us = 1e3;
  }
  struct Agg { int n = 0; double dur = 0, dram = 0, occ = 0, sm = 0, nvl = 0; };
  std::map<std::string, Agg> by_kernel;
  std::vector<std::string> order;
  for (size_t i = 2; i < rows.size(); ++i) {
    auto name_it = col.find("Kernel Name");
    if (name_it == col.end() || name_it->second >= rows[i].size()) continue;
    std::string name = rows[i][name_it->second].substr(0, 160);
    if (!by_kernel.count(name)) order.push_back(name);
    Agg& a = by_kernel[name];
    a.n++;
    a.dur += cell(rows[i], "gpu__time_duration.sum") * time_scale_us;
    a.dram += cell(rows[i], "dram__throughput.avg.pct_of_peak_sustained_elapsed");
    a.occ += cell(rows[i], "sm__warps_active.avg.pct_of_peak_sustained_active");
    a.sm += cell(rows[i], "sm__throughput.avg.pct_of_peak_sustained_elapsed");
    a.nvl += cell(rows[i], "nvltx__bytes.sum");
  }
  std::string text = "kernel | calls | mean us | DRAM % peak | achieved occupancy % | SM % peak\n";
  for (const std::string& name : order) {
    const Agg& a = by_kernel[name];
    v1::KernelProfile* k = prof->add_kernels();
    k->set_name(name);
    k->set_invocations(a.n);
    k->set_duration_us(a.dur / a.n);
    k->set_dram_throughput_pct(a.dram / a.n);
    k->set_achieved_occupancy_pct(a.occ / a.n);
    k->set_sm_throughput_pct(a.sm / a.n);
    if (a.dur > 0) k->set_nvlink_gbps(a.nvl / (a.dur * 1e3));
    if (prof->kernels_size() <= 20)
      absl::StrAppend(&text, name.substr(0, 80), " | ", a.n, " | ", absl::StrFormat("%.2f", a.dur / a.n),
                      " | ", absl::StrFormat("%.1f", a.dram / a.n), " | ",
                      absl::StrFormat("%.1f", a.occ / a.n), " | ", absl::StrFormat("%.1f", a.sm / a.n), "\n");
  }
  if (prof->kernels().empty())
    prof->set_error("no candidate kernel was profiled (the candidate launched no CUDA kernel?)");
  prof->set_text(text);
}

void Pipeline::Sanitize(const v1::EvaluateRequest& r, const std::string& scratch,
                        const std::string& artifact, const std::vector<int>& gpus,
                        Cancellation* cancel, Result* result) {
  const ExecutorConfig& c = runtime_->config();
  v1::SanitizerReport* rep = result->mutable_sanitizer();
  const char* tool = r.sanitize() == v1::SANITIZER_RACECHECK   ? "racecheck"
                     : r.sanitize() == v1::SANITIZER_SYNCCHECK ? "synccheck"
                     : r.sanitize() == v1::SANITIZER_INITCHECK ? "initcheck"
                                                               : "memcheck";
  rep->set_tool(tool);
  const double timeout = r.timeout_s() > 0 ? r.timeout_s() : c.default_timeout_s;
  // API errors are off: NCCL's initialisation probes kernels with calls that
  // fail by design (cudaErrorNoKernelImageForDevice), in every rank; what the
  // candidate's author needs are device-side memory, race and sync errors.
  std::vector<std::string> argv = {c.sanitizer_path, "--tool", tool, "--target-processes",
                                   "all", "--report-api-errors", "no", "--print-limit", "20"};
  std::vector<std::string> launch = LaunchArgv(r, artifact, /*correctness_only=*/true);
  for (size_t i = 0; i + 1 < launch.size(); ++i)
    if (launch[i] == "--timeout") launch[i + 1] = absl::StrCat(timeout * 10);
  argv.insert(argv.end(), launch.begin(), launch.end());
  auto spawned = runtime_->sandbox().Spawn(
      argv, runtime_->CandidatePolicy(scratch, gpus, static_cast<int64_t>((40 * timeout + 60) * 1000)));
  if (!spawned.ok()) {
    rep->set_error(absl::StrCat("could not start compute-sanitizer: ", spawned.status().message()));
    return;
  }
  cancel->SetProcess(spawned->get());
  auto waited = (*spawned)->Wait();
  cancel->SetProcess(nullptr);
  if (!waited.ok()) {
    rep->set_error(std::string(waited.status().message()));
    return;
  }
  // Every sanitized process prints "========= ERROR SUMMARY: N errors".
  int errors = 0, summaries = 0;
  std::string text;
  for (absl::string_view line : absl::StrSplit(waited->stdout_data + "\n" + waited->stderr_data, '\n')) {
    if (!absl::StartsWith(line, "=========")) continue;
    if (auto pos = line.find("ERROR SUMMARY:"); pos != absl::string_view::npos) {
      int n = 0;
      absl::string_view rest = absl::StripAsciiWhitespace(line.substr(pos + 14));
      if (absl::SimpleAtoi(rest.substr(0, rest.find(' ')), &n)) errors += n;
      ++summaries;
      continue;
    }
    if (text.size() < 8000) absl::StrAppend(&text, line, "\n");
  }
  rep->set_errors(errors);
  rep->set_text(text.empty() ? "no errors reported" : text);
  if (summaries == 0)
    rep->set_error(absl::StrCat("compute-sanitizer printed no summary (exit ", waited->exit_code,
                                "): ", Tail(waited->stderr_data, 1500)));
}

absl::StatusOr<Result> Pipeline::Run(const v1::EvaluateRequest& r, const std::string& evaluation_id,
                                     const std::string& client_key, const ProgressFn& progress,
                                     Cancellation* cancel) {
  const ExecutorConfig& c = runtime_->config();
  Stopwatch total;
  auto send = [&](v1::EvaluateProgress msg) {
    msg.set_elapsed_ms(total.ElapsedMillis());
    msg.set_evaluation_id(evaluation_id);
    if (progress) progress(msg);
  };
  ASSIGN_OR_RETURN(std::string scratch,
                   MakeScratchDir(scratch_root_, evaluation_id));
  const RemoveTreeOnExit cleanup(scratch);

  // 1. Compile (before any device is held; at most compile_workers compiler
  // processes at once, a slot taken only by a request that runs the compiler:
  // a cache hit or a joiner never waits behind another source's compile).
  // The compiling message goes out once the compiler knows whether this is a
  // cache hit, so it reports the real outcome (it used to say false always).
  CompileRequest creq;
  creq.backend = r.backend();
  creq.source = r.source();
  creq.client = client_key;
  creq.extra_flags.assign(r.extra_flags().begin(), r.extra_flags().end());
  auto compiled = compiler_->Compile(creq, scratch, cancel->flag(), [&send](bool cache_hit) {
    v1::EvaluateProgress m;
    m.mutable_compiling()->set_cache_hit(cache_hit);
    send(m);
  });
  if (cancel->cancelled()) return absl::CancelledError("cancelled while compiling");
  if (!compiled.ok()) return Annotate(compiled.status(), "compile");
  const double compile_wait_ms = compiled->slot_wait_ms;
  metrics_->Add("pkforge_executor_compile_total", 1,
                compiled->info.cache_hit() ? "cache=\"hit\"" : "cache=\"miss\"");

  Result result;
  const double compile_ms = compiled->info.compile_ms();
  std::vector<int> leased_gpus;
  double queue_ms = 0, hold_ms = 0;
  if (!compiled->ok) {
    if (compiled->timed_out) {
      result.set_status(Result::TIMEOUT);
      result.set_message("compilation exceeded its time limit");
      result.mutable_timeout()->set_phase(v1::PHASE_COMPILE);
      result.mutable_timeout()->set_limit_s(c.compile_timeout_ms / 1000.0);
    } else {
      result.set_status(Result::COMPILE_ERROR);
      std::string first = compiled->info.output().substr(0, compiled->info.output().find('\n'));
      result.set_message(absl::StrCat("compile error: ", first.substr(0, 300)));
    }
  } else {
    chmod(compiled->artifact_path.c_str(), 0644);  // readable by the candidate uid
    // 2. Queue for devices.
    const bool cuda = r.backend() == v1::BACKEND_CUDA;
    Stopwatch queued;
    auto lease = queue_->Acquire(
        cuda ? r.world_size() : 0, client_key,
        [&send](int position, int length) {
          v1::EvaluateProgress m;
          m.mutable_queued()->set_position(position);
          m.mutable_queued()->set_queue_length(length);
          send(m);
        },
        cancel->flag());
    queue_ms = queued.ElapsedMillis();
    if (!lease.ok()) return lease.status();
    leased_gpus = (*lease)->gpus();
    {
      v1::EvaluateProgress m;
      m.mutable_running()->set_phase(v1::PHASE_SETUP);
      for (int g : leased_gpus) m.mutable_running()->add_gpus(g);
      send(m);
    }
    // 3. Run.
    Stopwatch busy;
    result = RunWorker(r, scratch, compiled->artifact_path, leased_gpus, cancel);
    if (cancel->cancelled()) return absl::CancelledError("cancelled while running");
    if (r.profile() && result.status() == Result::OK) {
      v1::EvaluateProgress m;
      m.mutable_running()->set_phase(v1::PHASE_PROFILE);
      send(m);
      Profile(r, scratch, compiled->artifact_path, leased_gpus, cancel, &result);
    }
    if (r.sanitize() != v1::SANITIZER_NONE && result.status() != Result::SETUP_ERROR) {
      v1::EvaluateProgress m;
      m.mutable_running()->set_phase(v1::PHASE_SANITIZE);
      send(m);
      Sanitize(r, scratch, compiled->artifact_path, leased_gpus, cancel, &result);
    }
    if (cancel->cancelled()) return absl::CancelledError("cancelled while running");
    // 4. A crash or hang may have left a GPU broken: check before reuse
    // (gpu_health.h).
    if (NeedsGpuHealthCheck(r.backend(), result.status())) {
      // The waits between attempts end early when the evaluation is
      // cancelled (a client gone, the executor shutting down).
      const auto wait = [cancel](int ms) {
        for (int t = 0; t < ms && !cancel->cancelled(); t += 100)
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
      };
      for (std::string& flag : RetireFailedGpus(
               leased_gpus, [this](int g) { return devices_->CheckGpu(g); }, queue_,
               absl::StrCat("after evaluation ", evaluation_id, " (", StatusLabel(result.status()), ")"),
               wait))
        result.add_flags(std::move(flag));
    }
    hold_ms = busy.ElapsedMillis();
    for (int g : leased_gpus)
      metrics_->Add("pkforge_executor_gpu_busy_seconds_total", busy.ElapsedMillis() / 1e3,
                    absl::StrCat("gpu=\"", g, "\""));
    if (!cuda) metrics_->Add("pkforge_executor_host_busy_seconds_total", busy.ElapsedMillis() / 1e3);
  }

  // What was evaluated and how, whatever the judge filled in.
  result.set_evaluation_id(evaluation_id);
  result.set_problem(r.problem());
  result.set_backend(r.backend());
  result.set_world_size(r.world_size());
  const kernels::Problem& p = **kernels::FindProblem(r.problem());
  result.set_dtype(kernels::ToProtoDtype(*kernels::FromProtoDtype(p, r.dtype())));
  if (r.has_size()) *result.mutable_size() = r.size();
  else result.mutable_size()->set_preset("default");
  result.set_candidate_sha256(Sha256Hex(r.source()));
  *result.mutable_compile() = compiled->info;
  result.set_executor_id(c.executor_id);
  result.set_unsafe_no_sandbox(c.unsafe_no_sandbox);
  if (!r.include_samples()) {
    result.mutable_reference()->clear_samples_us();
    result.mutable_candidate()->clear_samples_us();
  }
  v1::StageTimes* st = result.mutable_stages();
  const double worker_run_ms = st->run_ms();
  st->set_compile_ms(compile_ms);
  st->set_queue_ms(queue_ms);
  st->set_run_ms(worker_run_ms);
  st->set_compile_wait_ms(compile_wait_ms);
  st->set_device_hold_ms(hold_ms);
  st->set_total_ms(total.ElapsedMillis());
  result.set_finished_wall_us(WallMicros());
  metrics_->Add("pkforge_executor_evaluations_total", 1,
                absl::StrCat("status=\"", StatusLabel(result.status()), "\""));
  metrics_->Observe("pkforge_executor_evaluation_seconds", st->total_ms() / 1e3);
  spdlog::info("evaluation {} {} {} ws={} -> {} ({:.0f} ms: compile {:.0f}{}, queue {:.0f}, run {:.0f})",
               evaluation_id, r.problem(), r.backend() == v1::BACKEND_CUDA ? "cuda" : "host",
               r.world_size(), StatusLabel(result.status()), st->total_ms(), compile_ms,
               compiled->info.cache_hit() ? " hit" : "", queue_ms, worker_run_ms);
  return result;
}

}  // namespace pkforge::executor
