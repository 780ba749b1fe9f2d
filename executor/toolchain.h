// Toolchain probing for the Compiler (compiler.h), split out of compiler.cc
// (issue 20): where the compilers are, what the compile sandbox must see for
// them, their versions (probed inside the sandbox), which CUDA libraries can
// be linked, and the host CPU (part of the cache key for -march=native).
//
// Contract
//   FindOnHostPath: the first executable <dir>/<name> on the daemon's PATH
//   (NOT_FOUND otherwise). CompileSandboxView: the read-only paths and the
//   PATH of the compile sandbox (FAILED_PRECONDITION naming the path when one
//   does not exist or is not absolute). ProbeCompilerVersion runs
//   `<compiler> --version` in the sandbox under `policy` (its scratch_dir is
//   removed afterwards) and returns the full text. FindCudaLinkArgs returns
//   -L/-l for NCCL and cuBLAS where lib<name>.so exists near nvcc or in the
//   system library folders, and logs a warning for each one missing.
//   SanitizeToolOutput makes a tool's bytes valid UTF-8 (proto3 strings).
//
// Thread safety
//   Stateless functions: callable from any thread at once. They read the
//   file system and /proc; the probe runs a sandboxed child process.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sandbox/sandbox.h"

namespace pkforge::executor {

// What the compile sandbox sees besides the toolchain view (/usr, /bin, ...).
struct CompileSandboxViewSpec {
  std::string include_dir;
  std::vector<std::string> extra_include_dirs;
  std::string cxx;   // name or absolute path
  std::string nvcc;  // absolute path or empty
  std::vector<std::string> extra_ro_paths;
};
struct CompileSandboxView {
  std::vector<std::string> ro_paths;  // deduplicated, in order
  std::string path_env;               // the value of PATH inside
};
absl::StatusOr<CompileSandboxView> MakeCompileSandboxView(const CompileSandboxViewSpec& spec);

// True when every sandbox sees `path` read-only anyway (sandbox.h: /usr, /bin, /sbin, /lib*).
bool InToolchainView(const std::string& path);

absl::StatusOr<std::string> FindOnHostPath(const std::string& name);

// Machine + CPU model name (for -march=native in the cache key).
std::string HostTarget();

// `<compiler> --version` inside the sandbox; `policy` must have a fresh
// scratch_dir, which is removed before returning.
absl::StatusOr<std::string> ProbeCompilerVersion(const sandbox::Sandbox& sandbox,
                                                 sandbox::SandboxPolicy policy,
                                                 const std::string& compiler);

// "g++ (Debian 12.2.0-14+deb12u1) 12.2.0" -> "g++ 12.2.0";
// nvcc's "... release 13.0, V13.0.88" -> "nvcc 13.0.88".
std::string ShortCompilerVersion(const std::string& text, bool nvcc);

// -L<dir> (where nvcc would not search) and -lnccl / -lcublas for the
// libraries found; `nvcc` is an absolute path.
std::vector<std::string> FindCudaLinkArgs(const std::string& nvcc);

// Replaces bytes that are not valid UTF-8 (and control characters other than
// newline and tab) by '?'.
std::string SanitizeToolOutput(std::string_view in);

}  // namespace pkforge::executor
