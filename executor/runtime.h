// Runtime: how the executor runs its trusted tools (pkforge-worker,
// pkforge-cuda-rank probe/health, ncu, compute-sanitizer) inside the sandbox:
// the read-only paths they need (their own folders, the shared-library
// folders of a relocatable bundle, the CUDA toolkit), the environment they
// get (nothing inherited: PATH, LD_LIBRARY_PATH, HOME, NCCL settings,
// CUDA_VISIBLE_DEVICES for the GPUs of the lease) and the limits.
//
// Thread safety: immutable after construction; share freely.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "executor/config.h"
#include "sandbox/sandbox.h"

namespace pkforge::executor {

class Runtime {
 public:
  Runtime(const ExecutorConfig& config, const sandbox::Sandbox* sandbox);

  // A policy for one run: scratch_dir is the private writable folder
  // (created by the caller); gpus empty means no GPU device nodes at all.
  sandbox::SandboxPolicy Policy(const std::string& scratch_dir, const std::vector<int>& gpus,
                                int64_t timeout_ms) const;

  // Runs argv to completion under Policy(); never throws, never hangs past
  // timeout_ms (plus the sandbox's kill grace).
  absl::StatusOr<sandbox::SandboxResult> Run(const std::vector<std::string>& argv,
                                             const std::string& scratch_dir,
                                             const std::vector<int>& gpus,
                                             int64_t timeout_ms) const;

  const ExecutorConfig& config() const { return config_; }
  const sandbox::Sandbox& sandbox() const { return *sandbox_; }

 private:
  const ExecutorConfig& config_;
  const sandbox::Sandbox* sandbox_;
  std::vector<std::string> ro_paths_;
  std::vector<std::string> base_env_;
};

// The folder under which sandboxed runs get their scratch folders: the
// data_dir itself when candidates run as our own uid or every ancestor of
// data_dir is searchable by others; otherwise (e.g. data in /root while
// candidates run as nobody) /tmp/pkforge-executor-<hash of data_dir>, made
// 0711 and owned by us.
absl::StatusOr<std::string> SandboxRoot(const ExecutorConfig& config);

// Creates (mode 0700, or 0711 for the parents when candidates run as
// another uid) and returns a fresh directory under `parent`.
absl::StatusOr<std::string> MakeScratchDir(const std::string& parent, const std::string& name);

}  // namespace pkforge::executor
