#include "executor/device.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <regex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "common/status.h"
#include "google/protobuf/util/json_util.h"
#include "spdlog/spdlog.h"

namespace pkforge::executor {
namespace fs = std::filesystem;

namespace {

std::vector<int> GpuDeviceNodes() {
  std::vector<int> out;
  std::error_code ec;
  static const std::regex kNode("nvidia([0-9]+)");
  for (const auto& e : fs::directory_iterator("/dev", ec)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (std::regex_match(name, m, kNode)) out.push_back(std::stoi(m[1]));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(s.size() - n);
}

}  // namespace

double MeasureHostMemcpyGbps() {
  const size_t bytes = size_t{128} << 20;
  std::vector<char> a(bytes, 1), b(bytes, 0);
  double best = 0;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, 2.0 * bytes / s / 1e9);
    a[i] = b[bytes - 1 - i];  // keep the copies observable
  }
  return best;
}

absl::StatusOr<std::unique_ptr<Devices>> Devices::Create(const Runtime* runtime,
                                                         const std::string& scratch_parent) {
  std::unique_ptr<Devices> d(new Devices(runtime, scratch_parent));
  const ExecutorConfig& c = runtime->config();
  std::vector<int> wanted;
  const std::vector<int> nodes = GpuDeviceNodes();
  if (c.gpus == "all") {
    for (size_t i = 0; i < nodes.size(); ++i) wanted.push_back(static_cast<int>(i));
  } else if (c.gpus != "none") {
    ASSIGN_OR_RETURN(wanted, ParseGpuList(c.gpus));
  }
  if (!wanted.empty() && c.cuda_rank_path.empty()) {
    if (c.gpus != "all")
      return absl::FailedPreconditionError(
          "gpus: GPUs were asked but pkforge-cuda-rank is missing (a build without CUDA?)");
    spdlog::warn("GPU device nodes exist but this build has no pkforge-cuda-rank: host backend only");
    wanted.clear();
  }
  if (!wanted.empty() && nodes.empty())
    return absl::FailedPreconditionError("gpus: GPUs were asked but /dev/nvidia* does not exist");
  d->gpus_ = wanted;
  d->info_.set_executor_id(c.executor_id);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  d->info_.set_hostname(host);
  d->info_.set_pkforge_version(PKFORGE_VERSION);
  d->info_.set_cpu_cores(static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  d->info_.mutable_ceilings()->set_host_memory_gbps(MeasureHostMemcpyGbps());
  d->info_.add_backends(v1::BACKEND_HOST);
  if (!d->gpus_.empty()) {
    auto probed = d->Probe(c.measure_ceilings);
    if (!probed.ok()) return Annotate(probed.status(), "probing the GPUs (pkforge-cuda-rank probe)");
    const double host_gbps = d->info_.ceilings().host_memory_gbps();
    v1::DeviceInfo merged = *probed;
    merged.set_executor_id(d->info_.executor_id());
    merged.set_hostname(d->info_.hostname());
    merged.set_pkforge_version(d->info_.pkforge_version());
    merged.set_cpu_cores(d->info_.cpu_cores());
    merged.mutable_ceilings()->set_host_memory_gbps(host_gbps);
    merged.clear_backends();
    merged.add_backends(v1::BACKEND_HOST);
    merged.add_backends(v1::BACKEND_CUDA);
    d->info_ = std::move(merged);
  }
  return d;
}

absl::StatusOr<v1::DeviceInfo> Devices::Probe(bool measure) const {
  ASSIGN_OR_RETURN(std::string scratch, MakeScratchDir(scratch_parent_, NewId("probe")));
  std::vector<std::string> argv = {runtime_->config().cuda_rank_path, "probe"};
  if (measure) argv.push_back("--measure");
  auto r = runtime_->Run(argv, scratch, gpus_, measure ? 120'000 : 30'000);
  std::error_code ec;
  fs::remove_all(scratch, ec);
  if (!r.ok()) return r.status();
  if (!r->ok())
    return absl::InternalError(absl::StrCat("probe failed (exit ", r->exit_code, ", signal ",
                                            r->term_signal, r->timed_out ? ", timed out" : "",
                                            "): ", Tail(r->stderr_data, 2000)));
  v1::DeviceInfo info;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  auto st = google::protobuf::util::JsonStringToMessage(r->stdout_data, &info, opts);
  if (!st.ok())
    return absl::InternalError(absl::StrCat("probe printed unparsable JSON: ", st.ToString(), ": ",
                                            Tail(r->stdout_data, 500)));
  // The probe saw only the bound GPUs, numbered from 0 in PCI order (the
  // configured list is sorted, so device i is gpus_[i]).
  for (auto& g : *info.mutable_gpus())
    if (g.index() >= 0 && g.index() < static_cast<int>(gpus_.size())) g.set_index(gpus_[g.index()]);
  for (auto& l : *info.mutable_topology()) {
    if (l.src() >= 0 && l.src() < static_cast<int>(gpus_.size())) l.set_src(gpus_[l.src()]);
    if (l.dst() >= 0 && l.dst() < static_cast<int>(gpus_.size())) l.set_dst(gpus_[l.dst()]);
  }
  return info;
}

v1::DeviceInfo Devices::Describe(const DeviceQueue& queue) const {
  v1::DeviceInfo out;
  {
    std::lock_guard lock(mu_);
    out = info_;
  }
  for (const auto& h : queue.Health()) {
    for (auto& g : *out.mutable_gpus()) {
      if (g.index() != h.index) continue;
      g.set_healthy(h.healthy);
      g.set_unhealthy_reason(h.reason);
    }
  }
  out.set_usable_gpus(queue.usable_gpus());
  out.set_queue_length(queue.queue_length());
  return out;
}

absl::Status Devices::Remeasure() {
  std::lock_guard one_at_a_time(remeasure_mu_);
  if (gpus_.empty()) {
    std::lock_guard lock(mu_);
    info_.mutable_ceilings()->set_host_memory_gbps(MeasureHostMemcpyGbps());
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(v1::DeviceInfo probed, Probe(/*measure=*/true));
  std::lock_guard lock(mu_);
  const double host = MeasureHostMemcpyGbps();
  *info_.mutable_ceilings() = probed.ceilings();
  info_.mutable_ceilings()->set_host_memory_gbps(host);
  *info_.mutable_topology() = probed.topology();
  return absl::OkStatus();
}

absl::Status Devices::CheckGpu(int gpu) const {
  if (runtime_->config().cuda_rank_path.empty())
    return absl::FailedPreconditionError("no pkforge-cuda-rank to run the health check");
  ASSIGN_OR_RETURN(std::string scratch, MakeScratchDir(scratch_parent_, NewId("health")));
  // The check's own limit (25 s) under the sandbox's (30 s): CUDA's
  // initialisation right after a crashed evaluation waits for the driver to
  // tear that evaluation's contexts down (over 10 s on the H100 after an
  // illegal-address fault); gpu_health.h retries on top.
  auto r = runtime_->Run({runtime_->config().cuda_rank_path, "health", "--gpu", "0",
                          "--timeout-ms", "25000"},
                         scratch, {gpu}, 30'000);
  std::error_code ec;
  fs::remove_all(scratch, ec);
  if (!r.ok()) return Annotate(r.status(), absl::StrCat("health check of GPU ", gpu));
  if (!r->ok())
    return absl::UnavailableError(absl::StrCat(
        "health check of GPU ", gpu, " failed (exit ", r->exit_code, ", signal ", r->term_signal,
        r->timed_out ? ", timed out" : "", "): ", Tail(r->stderr_data + r->stdout_data, 1000)));
  return absl::OkStatus();
}

void Devices::SetToolkit(const std::string& cuda_toolkit, const std::string& sandbox_mode,
                         const std::string& sandbox_detail) {
  std::lock_guard lock(mu_);
  if (info_.cuda_toolkit_version().empty()) info_.set_cuda_toolkit_version(cuda_toolkit);
  info_.mutable_sandbox()->set_mode(sandbox_mode);
  info_.mutable_sandbox()->set_detail(sandbox_detail);
}

}  // namespace pkforge::executor
