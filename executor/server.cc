#include "executor/server.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/net.h"
#include "common/status.h"
#include "spdlog/spdlog.h"

namespace pkforge::executor {
namespace fs = std::filesystem;

absl::StatusOr<std::unique_ptr<ExecutorServer>> ExecutorServer::Start(const ExecutorConfig& config) {
  std::unique_ptr<ExecutorServer> s(new ExecutorServer());
  s->config_ = config;
  const ExecutorConfig& c = s->config_;
  std::string token;
  if (!c.token_file.empty()) {
    ASSIGN_OR_RETURN(token, ReadTokenFile(c.token_file, TokenRole::kRequire, "token_file"));
    RegisterSecret(token);
  }
  std::error_code ec;
  fs::create_directories(c.data_dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("data_dir ", c.data_dir, ": ", ec.message()));

  // Sandbox: refuse to start without isolation unless told otherwise.
  sandbox::SandboxConfig sc;
  sc.run_as_uid = c.run_as_uid;
  sc.run_as_gid = c.run_as_gid;
  ASSIGN_OR_RETURN(s->sandbox_, sandbox::Sandbox::Create(sc));
  std::string sandbox_mode = "bubblewrap", sandbox_detail;
  if (c.unsafe_no_sandbox) {
    spdlog::warn("*** --unsafe-no-sandbox: candidate code runs WITHOUT isolation; every result "
                 "says so (unsafe_no_sandbox=true) ***");
    sandbox_mode = "unsafe-no-sandbox";
    sandbox_detail = "isolation disabled by the operator";
  } else {
    absl::Status st = s->sandbox_->SelfTest(false);
    if (!st.ok() && c.run_as_auto && c.run_as_uid >= 0) {
      // Dropping to an unprivileged uid needs unprivileged user namespaces,
      // which some hosts refuse (e.g. Ubuntu's AppArmor restriction). The
      // sandbox still isolates (own user namespace, no capabilities,
      // seccomp), but its processes map to our uid on the host: say so.
      spdlog::warn("sandbox as uid {} failed ({}); falling back to a user namespace of uid {}. "
                   "Allow unprivileged user namespaces (sysctl "
                   "kernel.apparmor_restrict_unprivileged_userns=0) to run candidates unprivileged",
                   c.run_as_uid, std::string(st.message()), geteuid());
      s->config_.run_as_uid = -1;
      s->config_.run_as_gid = -1;
      sc.run_as_uid = -1;
      sc.run_as_gid = -1;
      ASSIGN_OR_RETURN(s->sandbox_, sandbox::Sandbox::Create(sc));
      st = s->sandbox_->SelfTest(false);
    }
    if (!st.ok())
      return absl::FailedPreconditionError(absl::StrCat(
          "the sandbox does not work on this host (", st.message(),
          "); fix it or start with --unsafe-no-sandbox (then every result is marked)"));
    auto bwrap = s->sandbox_->BwrapPath();
    sandbox_detail = absl::StrCat("bwrap ", bwrap.ok() ? *bwrap : "?", "; candidates run as uid ",
                                  c.run_as_uid >= 0 ? std::to_string(c.run_as_uid) : "(own)");
  }
  s->runtime_ = std::make_unique<Runtime>(s->config_, s->sandbox_.get());

  CompilerConfig cc;
  cc.nvcc = c.nvcc;
  cc.cxx = c.cxx;
  cc.include_dir = c.kernels_include;
  cc.extra_include_dirs = c.extra_include_dirs;
  cc.cache_dir = (fs::path(c.data_dir) / "compile-cache").string();
  cc.max_concurrent = std::max(1, c.compile_workers);
  ASSIGN_OR_RETURN(const std::string sandbox_root, SandboxRoot(c));
  s->sandbox_root_ = sandbox_root;
  // Before anything runs under the root: a killed predecessor's scratch
  // folders go (runtime.h, SandboxRootClaim).
  ASSIGN_OR_RETURN(s->root_claim_, SandboxRootClaim::Claim(sandbox_root));
  cc.work_dir = (fs::path(sandbox_root) / "compile-work").string();
  fs::create_directories(cc.work_dir, ec);
  cc.cache_max_bytes = c.cache_max_mb << 20;
  cc.timeout_ms = c.compile_timeout_ms;
  cc.unsafe_no_sandbox = c.unsafe_no_sandbox;

  ASSIGN_OR_RETURN(s->devices_,
                   Devices::Create(s->runtime_.get(), (fs::path(sandbox_root) / "scratch").string()));
  {
    const v1::DeviceInfo info = s->devices_->Describe(DeviceQueue({}, 1));
    if (!info.gpus().empty()) {
      const auto& g = info.gpus(0);
      cc.cuda_arch = absl::StrCat("sm_", g.compute_capability_major(), g.compute_capability_minor());
    }
  }
  // Disjoint CPUs per GPU and one shared lane (host evaluations, compiles):
  // concurrent evaluations never share the CPUs their ranks are timed on.
  {
    const CpuTopology topology = CpuTopology::Probe(s->devices_->gpus());
    s->runtime_->SetCpuLanes(CpuLanes(topology, s->devices_->gpus()));
    const CpuLanes& lanes = s->runtime_->cpu_lanes();
    if (!s->devices_->gpus().empty()) {
      std::string what;
      for (int g : s->devices_->gpus())
        what += absl::StrCat(" GPU ", g, ": ", absl::StrJoin(lanes.For({g}), ","), ";");
      if (lanes.shared().empty())
        spdlog::warn("CPU lanes: {} CPUs are too few for {} GPUs and a shared lane: concurrent "
                     "evaluations share CPUs (their timings disturb each other)",
                     topology.cpus.size(), s->devices_->gpus().size());
      else
        spdlog::info("CPU lanes:{} shared (host evaluations, compiles): {}", what,
                     absl::StrJoin(lanes.shared(), ","));
    }
  }
  cc.cpus = s->runtime_->cpu_lanes().shared();
  ASSIGN_OR_RETURN(s->compiler_, Compiler::Create(cc, s->sandbox_.get()));
  s->devices_->SetToolkit(s->compiler_->CompilerVersion(v1::BACKEND_CUDA), sandbox_mode, sandbox_detail);
  s->queue_ = std::make_unique<DeviceQueue>(s->devices_->gpus(), c.host_slots);

  Metrics& m = s->metrics_;
  m.Declare("pkforge_executor_evaluations_total", "counter", "Evaluations finished, by status");
  m.Declare("pkforge_executor_rejected_total", "counter", "Evaluate calls rejected before any work");
  m.Declare("pkforge_executor_compile_total", "counter", "Compiles requested, by cache outcome");
  m.Declare("pkforge_executor_compile_cache_bytes", "gauge", "Bytes held by the compile cache");
  m.Declare("pkforge_executor_queue_length", "gauge", "Evaluations waiting for devices");
  m.Declare("pkforge_executor_in_flight", "gauge", "Evaluate calls being served");
  m.Declare("pkforge_executor_usable_gpus", "gauge", "Healthy GPUs in the pool");
  m.Declare("pkforge_executor_gpu_busy_seconds_total", "counter", "Seconds each GPU ran evaluations");
  m.Declare("pkforge_executor_host_busy_seconds_total", "counter", "Seconds host slots ran evaluations");
  m.Declare("pkforge_executor_evaluation_seconds", "histogram", "Evaluate latency, accept to result",
            {0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60, 120, 300});
  DeviceQueue* q = s->queue_.get();
  Compiler* comp = s->compiler_.get();
  m.SetCallback("pkforge_executor_queue_length", [q] { return double(q->queue_length()); });
  m.SetCallback("pkforge_executor_usable_gpus", [q] { return double(q->usable_gpus()); });
  m.SetCallback("pkforge_executor_compile_cache_bytes", [comp] { return double(comp->stats().bytes); });

  s->pipeline_ = std::make_unique<Pipeline>(s->runtime_.get(), s->compiler_.get(), s->queue_.get(),
                                            s->devices_.get(), &s->metrics_,
                                            (fs::path(sandbox_root) / "scratch").string());
  s->service_ = std::make_unique<ExecutorService>(&s->config_, s->pipeline_.get(), s->devices_.get(),
                                                  s->queue_.get(), s->compiler_.get(), &s->metrics_,
                                                  token);

  rpc::ServerOptions so;
  so.listen = c.listen;
  so.tls_cert_file = c.tls_cert_file;
  so.tls_key_file = c.tls_key_file;
  so.tls_what = "tls_cert_file";
  so.services = {s->service_.get()};
  so.max_receive_bytes = 8 << 20;
  so.metrics_listen = c.metrics_listen;
  so.metrics = &s->metrics_;
  ASSIGN_OR_RETURN(s->server_, rpc::GrpcServer::Start(so));
  s->address_ = s->server_->address();
  const v1::DeviceInfo info = s->devices_->Describe(*s->queue_);
  spdlog::info("pkforge-executor {} listening on {} ({}{}); {} GPU(s), sandbox {}, cache {}",
               c.executor_id, s->address_, c.tls_cert_file.empty() ? "plaintext" : "TLS",
               token.empty() ? "" : ", bearer token required", info.gpus_size(), sandbox_mode,
               cc.cache_dir);
  return s;
}

void ExecutorServer::Shutdown(double grace_s) {
  if (shut_down_) return;
  shut_down_ = true;
  spdlog::info("shutting down: {} evaluation(s) in flight get {:.0f} s", service_->in_flight(), grace_s);
  server_->BeginShutdown();
  service_->BeginShutdown();
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(grace_s * 1000));
  if (!service_->WaitIdle(deadline)) {
    spdlog::warn("grace period over: cancelling {} evaluation(s)", service_->in_flight());
    service_->CancelAll();
    queue_->Shutdown();
    service_->WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(30));
  }
  server_->Stop(std::chrono::system_clock::now() + std::chrono::seconds(5));
  // A fallback sandbox root in /tmp holds only per-run folders, all removed
  // by now; leave nothing behind, unless another executor still serves from
  // the same root (its runs' folders are in there).
  if (!sandbox_root_.empty() && sandbox_root_.rfind("/tmp/pkforge-executor-", 0) == 0 &&
      root_claim_ != nullptr && root_claim_->TakeExclusive()) {
    std::error_code ec;
    fs::remove_all(sandbox_root_, ec);
  }
}

ExecutorServer::~ExecutorServer() {
  if (server_) Shutdown(0);
}

}  // namespace pkforge::executor
