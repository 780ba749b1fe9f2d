#include "executor/toolchain.h"

#include <stdlib.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "common/utf8.h"
#include "common/status.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace pkforge::executor {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kProbeTimeoutMs = 60'000;

}  // namespace

// Replaces bytes that are not valid UTF-8 (and control characters other than
// newline and tab) by '?': CompileInfo.output is a proto3 string, which must
// be valid UTF-8, and diagnostics may quote arbitrary bytes of the source.
std::string SanitizeToolOutput(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const auto c = static_cast<unsigned char>(in[i]);
    if (c < 0x80) {
      out.push_back((c >= 0x20 && c != 0x7f) || c == '\n' || c == '\t' ? static_cast<char>(c)
                                                                       : '?');
      ++i;
      continue;
    }
    uint32_t cp = 0;
    if (const size_t len = Utf8SequenceAt(in, i, &cp); len > 0) {
      out.append(in.substr(i, len));
      i += len;
    } else {
      out.push_back('?');
      ++i;
    }
  }
  return out;
}

std::string ShortCompilerVersion(const std::string& text, bool nvcc) {
  if (nvcc) {
    size_t pos = text.find(", V");
    if (pos != std::string::npos) {
      size_t end = text.find_first_of(" \n", pos + 3);
      return "nvcc " + text.substr(pos + 3, end == std::string::npos ? end : end - pos - 3);
    }
  }
  std::string line = text.substr(0, text.find('\n'));
  size_t clang = line.find("clang version ");
  if (clang != std::string::npos) {
    std::istringstream rest(line.substr(clang + 14));
    std::string v;
    rest >> v;
    return "clang " + v;
  }
  std::istringstream words(line);
  std::vector<std::string> tokens;
  for (std::string w; words >> w;) tokens.push_back(w);
  if (tokens.size() >= 2) return tokens.front() + " " + tokens.back();
  return line;
}

bool InToolchainView(const std::string& path) {
  // What every sandbox sees read-only anyway (sandbox.h: /usr, /bin, /sbin, /lib*).
  for (const char* root : {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    std::string_view r(root);
    if (path == r ||
        (path.size() > r.size() && path.compare(0, r.size(), r) == 0 && path[r.size()] == '/')) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::string> FindOnHostPath(const std::string& name) {
  const char* path = getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty() || dir[0] != '/') continue;
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(fmt::format("'{}' not found on PATH", name));
}

std::string HostTarget() {
  struct utsname u;
  std::string target = uname(&u) == 0 ? u.machine : "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      target += " " + line.substr(line.find(':') == std::string::npos ? 0 : line.find(':') + 1);
      break;
    }
  }
  return target;
}

absl::StatusOr<CompileSandboxView> MakeCompileSandboxView(const CompileSandboxViewSpec& spec) {
  std::error_code ec;
  CompileSandboxView view;
  // What the compile sandbox sees besides the toolchain view.
  std::vector<std::string> ro = {spec.include_dir};
  for (const auto& d : spec.extra_include_dirs) ro.push_back(d);
  std::vector<std::string> path_dirs;
  auto add_tool = [&](const std::string& tool, int levels_up) {
    if (tool.empty() || tool[0] != '/') return;
    path_dirs.push_back(fs::path(tool).parent_path().string());
    for (fs::path p : {fs::path(tool), fs::weakly_canonical(tool, ec)}) {
      for (int i = 0; i < levels_up; ++i) p = p.parent_path();
      if (!p.empty() && !InToolchainView(p.string())) ro.push_back(p.string());
    }
  };
  add_tool(spec.cxx, 1);
  add_tool(spec.nvcc, 2);  // nvcc reads <root>/nvvm, <root>/include, <root>/targets
  for (const auto& d : spec.extra_ro_paths) ro.push_back(d);
  for (const auto& p : ro) {
    if (p.empty() || p[0] != '/' || !fs::exists(p, ec)) {
      return absl::FailedPreconditionError(
          fmt::format("compile sandbox path '{}' (include_dir, extra_include_dirs, extra_ro_paths "
                      "or a compiler's folder) does not exist or is not absolute",
                      p));
    }
  }
  std::set<std::string> seen;
  for (auto& p : ro) {
    if (seen.insert(p).second) view.ro_paths.push_back(p);
  }
  path_dirs.insert(path_dirs.end(), {"/usr/local/bin", "/usr/bin", "/bin"});
  std::set<std::string> on_path;
  for (const auto& d : path_dirs) {
    if (!on_path.insert(d).second) continue;
    view.path_env += (view.path_env.empty() ? "" : ":") + d;
  }
  return view;
}

std::vector<std::string> FindCudaLinkArgs(const std::string& nvcc) {
  std::error_code ec;
  std::vector<std::string> args;
  // Candidates may call NCCL and cuBLAS (kernels/README.md). Link a library
  // only where it exists, so a toolkit without NCCL still compiles every
  // candidate that does not use it.
  const fs::path root = fs::weakly_canonical(nvcc, ec).parent_path().parent_path();
  struct utsname u;
  const std::string machine = uname(&u) == 0 ? u.machine : "x86_64";
  std::vector<std::pair<fs::path, bool>> dirs;  // (dir, needs -L)
  for (const auto& t : fs::directory_iterator(root / "targets", ec)) {
    dirs.push_back({t.path() / "lib", false});  // nvcc.profile's own -L
    dirs.push_back({t.path() / "lib64", false});
  }
  for (const char* sub : {"lib64", "lib"}) dirs.push_back({root / sub, true});
  for (std::string d : {"/usr/lib/" + machine + "-linux-gnu", std::string("/usr/lib64"),
                        std::string("/usr/lib"), std::string("/usr/local/lib")}) {
    dirs.push_back({d, false});  // the linker's default search path
  }
  std::vector<std::string> found;
  for (const char* lib : {"nccl", "cublas"}) {
    bool have = false;
    for (const auto& [dir, needs_l] : dirs) {
      std::error_code ec2;
      if (!fs::exists(dir / fmt::format("lib{}.so", lib), ec2)) continue;
      if (needs_l) {
        const std::string l = "-L" + dir.string();
        if (std::find(args.begin(), args.end(), l) == args.end()) {
          args.push_back(l);
        }
      }
      have = true;
      break;
    }
    if (have) {
      found.push_back(lib);
    } else {
      spdlog::warn(
          "compiler: lib{}.so not found near {} or in the system library folders; cuda "
          "candidates are linked without -l{}",
          lib, nvcc, lib);
    }
  }
  for (const auto& lib : found) args.push_back("-l" + lib);
  return args;
}

absl::StatusOr<std::string> ProbeCompilerVersion(const sandbox::Sandbox& sandbox,
                                                 sandbox::SandboxPolicy policy,
                                                 const std::string& compiler) {
  const std::string scratch = policy.scratch_dir;
  policy.timeout_ms = kProbeTimeoutMs;
  policy.cpu_seconds = kProbeTimeoutMs / 1000;
  policy.max_output_bytes = 64 * 1024;
  auto r = sandbox.Run({compiler, "--version"}, policy);
  std::error_code ec;
  fs::remove_all(scratch, ec);
  if (!r.ok()) {
    return Annotate(r.status(),
                    fmt::format("running '{} --version' in the compile sandbox", compiler));
  }
  if (!r->ok() || r->stdout_data.empty()) {
    return absl::FailedPreconditionError(
        fmt::format("'{} --version' failed in the compile sandbox (exit {}, signal {}{}): {}",
                    compiler, r->exit_code, r->term_signal, r->timed_out ? ", timed out" : "",
                    SanitizeToolOutput(r->stderr_data.substr(0, 2000))));
  }
  return r->stdout_data;
}

}  // namespace pkforge::executor
