#include "executor/config.h"

#include <algorithm>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace pkforge::executor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

template <typename T>
absl::Status Get(const json& j, const char* key, T* out) {
  try {
    *out = j.get<T>();
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config key '", key, "': ", e.what()));
  }
  return absl::OkStatus();
}

std::string FindOnPath(const std::string& name) {
  const char* path = getenv("PATH");
  if (path == nullptr) return "";
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    if (dir.empty()) continue;
    fs::path candidate = fs::path(std::string(dir)) / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

std::string FindTool(const std::string& name, const fs::path& self_dir) {
  if (fs::path next = self_dir / name; access(next.c_str(), X_OK) == 0) return next.string();
  if (std::string on_path = FindOnPath(name); !on_path.empty()) return on_path;
  if (fs::path cuda = fs::path("/usr/local/cuda/bin") / name; access(cuda.c_str(), X_OK) == 0)
    return cuda.string();
  return "";
}

// Version directories such as "2025.3.1" compare numerically, part by part.
std::vector<int> VersionParts(const std::string& name) {
  std::vector<int> v;
  for (absl::string_view part : absl::StrSplit(name, absl::ByAnyChar(".-_"), absl::SkipEmpty())) {
    int n = 0;
    if (absl::SimpleAtoi(part, &n)) v.push_back(n);
  }
  return v;
}

}  // namespace

std::string ResolveNcu(const std::string& path, const std::vector<std::string>& install_roots) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(path, ec);
  if (ec) return path;
  std::ifstream f(canonical, std::ios::binary);
  char magic[2] = {};
  if (!f.read(magic, 2) || magic[0] != '#' || magic[1] != '!') return canonical.string();
  // The CUDA toolkit's bin/ncu is a shell script that looks for the newest
  // Nsight Compute at run time (/opt/nvidia/nsight-compute/<version>/ or
  // <toolkit>/nsight-compute-<version>/). The sandbox binds paths, so the
  // executor runs that install's own ncu and binds its directory.
  std::vector<fs::path> roots;
  for (const auto& r : install_roots) roots.emplace_back(r);
  const fs::path toolkit = canonical.parent_path().parent_path();
  roots.push_back(toolkit);
  fs::path best;
  std::vector<int> best_version;
  for (const fs::path& root : roots) {
    const bool in_toolkit = root == toolkit;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const std::string prefix = "nsight-compute";
      if (in_toolkit && name.rfind(prefix, 0) != 0) continue;
      const fs::path ncu = it->path() / "ncu";
      if (access(ncu.c_str(), X_OK) != 0) continue;
      std::vector<int> version = VersionParts(in_toolkit ? name.substr(prefix.size()) : name);
      if (best.empty() || version > best_version) {
        best = ncu;
        best_version = version;
      }
    }
    ec.clear();
  }
  if (best.empty()) return canonical.string();
  return fs::weakly_canonical(best, ec).string();
}

absl::Status MergeConfigFile(const std::string& path, ExecutorConfig* c) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("config file ", path, ": cannot open"));
  json j;
  try {
    j = json::parse(in);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config file ", path, ": ", e.what()));
  }
  if (!j.is_object())
    return absl::InvalidArgumentError(absl::StrCat("config file ", path, ": not a JSON object"));
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    absl::Status s;
#define PKF_FIELD(name) \
  if (k == #name) {     \
    s = Get(v, #name, &c->name); \
  } else
    PKF_FIELD(listen) PKF_FIELD(token_file) PKF_FIELD(tls_cert_file) PKF_FIELD(tls_key_file)
    PKF_FIELD(metrics_listen) PKF_FIELD(executor_id) PKF_FIELD(log_format) PKF_FIELD(log_level)
    PKF_FIELD(shutdown_grace_s) PKF_FIELD(data_dir) PKF_FIELD(cache_max_mb) PKF_FIELD(gpus)
    PKF_FIELD(measure_ceilings) PKF_FIELD(host_slots) PKF_FIELD(max_host_world_size)
    PKF_FIELD(nccl_nvls_enable) PKF_FIELD(worker_path) PKF_FIELD(cuda_rank_path) PKF_FIELD(nvcc)
    PKF_FIELD(cxx) PKF_FIELD(kernels_include) PKF_FIELD(extra_include_dirs)
    PKF_FIELD(library_path) PKF_FIELD(ncu_path) PKF_FIELD(sanitizer_path)
    PKF_FIELD(compile_workers) PKF_FIELD(max_in_flight) PKF_FIELD(compile_timeout_ms)
    PKF_FIELD(default_timeout_s) PKF_FIELD(max_timeout_s) PKF_FIELD(max_trials)
    PKF_FIELD(max_iters) PKF_FIELD(max_source_bytes) PKF_FIELD(run_memory_mb) PKF_FIELD(tmpfs_mb) PKF_FIELD(max_file_mb)
    PKF_FIELD(unsafe_no_sandbox) PKF_FIELD(run_as_uid) PKF_FIELD(run_as_gid) {
      return absl::InvalidArgumentError(
          absl::StrCat("config file ", path, ": unknown key '", k, "'"));
    }
#undef PKF_FIELD
    if (!s.ok()) return Annotate(s, absl::StrCat("config file ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> ParseGpuList(const std::string& text) {
  std::vector<int> out;
  if (text == "all" || text == "none" || text.empty()) return out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int v = -1;
    if (!absl::SimpleAtoi(part, &v) || v < 0 || v > 1023)
      return absl::InvalidArgumentError(absl::StrCat("gpus: '", part, "' is not a GPU index"));
    for (int seen : out)
      if (seen == v) return absl::InvalidArgumentError(absl::StrCat("gpus: ", v, " listed twice"));
    out.push_back(v);
  }
  // Ascending: inside a sandbox that binds only some GPUs, CUDA numbers the
  // visible ones 0..n-1 in PCI order, and the executor maps inside device i
  // to the i-th listed GPU; "3,1" would otherwise mislabel them.
  std::sort(out.begin(), out.end());
  return out;
}

absl::Status Finalize(ExecutorConfig* c, const std::string& self_exe) {
  const fs::path self_dir = fs::path(self_exe).parent_path();
  if (c->listen.empty()) return absl::InvalidArgumentError("listen: empty");
  if (!IsLoopbackAddress(c->listen) && c->token_file.empty())
    return absl::InvalidArgumentError(absl::StrCat(
        "listen: ", c->listen,
        " is not a loopback address; a bearer token is required (--token-file)"));
  if (c->tls_cert_file.empty() != c->tls_key_file.empty())
    return absl::InvalidArgumentError("tls_cert_file/tls_key_file: give both or neither");
  if (c->log_format != "text" && c->log_format != "json")
    return absl::InvalidArgumentError("log_format: text or json");
  if (c->gpus != "all" && c->gpus != "none") RETURN_IF_ERROR(ParseGpuList(c->gpus).status());
  if (c->host_slots < 1 || c->host_slots > 64)
    return absl::InvalidArgumentError("host_slots: 1..64");
  if (c->max_host_world_size < 1 || c->max_host_world_size > 256)
    return absl::InvalidArgumentError("max_host_world_size: 1..256");
  if (c->compile_workers < 0) return absl::InvalidArgumentError("compile_workers: >= 0");
  if (c->compile_workers == 0)
    c->compile_workers = std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  if (c->max_in_flight < 1) return absl::InvalidArgumentError("max_in_flight: >= 1");
  if (c->default_timeout_s <= 0 || c->max_timeout_s < c->default_timeout_s)
    return absl::InvalidArgumentError("default_timeout_s/max_timeout_s: 0 < default <= max");
  if (c->cache_max_mb < 16) return absl::InvalidArgumentError("cache_max_mb: at least 16");
  if (c->data_dir.empty()) return absl::InvalidArgumentError("data_dir: empty");

  if (c->worker_path.empty()) c->worker_path = FindTool("pkforge-worker", self_dir);
  if (c->worker_path.empty() || access(c->worker_path.c_str(), X_OK) != 0)
    return absl::FailedPreconditionError(absl::StrCat(
        "worker_path: pkforge-worker not found or not executable ('", c->worker_path,
        "'); it is looked for next to ", self_exe, " and on PATH"));
  if (c->cuda_rank_path.empty()) {
    fs::path next = fs::path(c->worker_path).parent_path() / "pkforge-cuda-rank";
    if (access(next.c_str(), X_OK) == 0) c->cuda_rank_path = next.string();
  }
  if (c->nvcc == "none") {
    c->nvcc.clear();
  } else if (c->nvcc.empty()) {
    c->nvcc = FindTool("nvcc", "/nonexistent");
  }
  if (c->kernels_include.empty()) {
    // Build tree and bundle: <bin>/../include; source tree fallback for
    // developers running from a build directory.
    for (const fs::path& dir : {self_dir.parent_path() / "include",
                                fs::path(PKFORGE_SOURCE_KERNELS_INCLUDE)}) {
      if (fs::exists(dir / "pkforge" / "candidate.h")) {
        c->kernels_include = dir.string();
        break;
      }
    }
  }
  if (c->kernels_include.empty() ||
      !fs::exists(fs::path(c->kernels_include) / "pkforge" / "candidate.h"))
    return absl::FailedPreconditionError(absl::StrCat(
        "kernels_include: no pkforge/candidate.h under '", c->kernels_include, "'"));
  if (c->library_path.empty()) {
    if (const char* ld = getenv("LD_LIBRARY_PATH")) c->library_path = ld;
  }
  // The sandbox binds paths at their canonical location only, so every path
  // handed to a sandboxed tool must be canonical (a bundle reached through a
  // symlinked build path, say).
  auto canonical = [](std::string* p) {
    if (p->empty()) return;
    std::error_code ec;
    fs::path resolved = fs::weakly_canonical(*p, ec);
    if (!ec) *p = resolved.string();
  };
  canonical(&c->worker_path);
  canonical(&c->cuda_rank_path);
  canonical(&c->kernels_include);
  for (auto& d : c->extra_include_dirs) canonical(&d);
  {
    std::string joined;
    for (absl::string_view dir : absl::StrSplit(c->library_path, ':', absl::SkipEmpty())) {
      std::string d(dir);
      canonical(&d);
      absl::StrAppend(&joined, joined.empty() ? "" : ":", d);
    }
    c->library_path = joined;
  }
  if (c->ncu_path.empty()) c->ncu_path = FindTool("ncu", "/nonexistent");
  if (!c->ncu_path.empty()) {
    const std::string resolved = ResolveNcu(c->ncu_path, {"/opt/nvidia/nsight-compute"});
    if (resolved != c->ncu_path) spdlog::info("ncu: {} runs {}", c->ncu_path, resolved);
    c->ncu_path = resolved;
  }
  if (c->sanitizer_path.empty()) c->sanitizer_path = FindTool("compute-sanitizer", "/nonexistent");
  // A tool that is present but broken (e.g. the toolkit's ncu wrapper without
  // Nsight Compute installed) counts as absent: requests then get a clear
  // FAILED_PRECONDITION instead of a failed report.
  for (std::string* tool : {&c->ncu_path, &c->sanitizer_path}) {
    if (tool->empty()) continue;
    const std::string cmd = absl::StrCat("'", *tool, "' --version >/dev/null 2>&1");
    if (std::system(cmd.c_str()) != 0) {
      spdlog::warn("{} does not run ({} --version failed): its reports are unavailable", *tool, *tool);
      tool->clear();
    }
  }
  c->run_as_auto = c->run_as_uid == -2;
  if (c->run_as_uid == -2) c->run_as_uid = geteuid() == 0 ? 65534 : -1;
  if (c->run_as_gid == -2) c->run_as_gid = geteuid() == 0 ? 65534 : -1;
  if (c->executor_id.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    c->executor_id = host;
  }
  return absl::OkStatus();
}

}  // namespace pkforge::executor
