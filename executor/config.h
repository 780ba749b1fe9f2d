// ExecutorConfig: every setting of pkforge-executor in one struct with
// in-class defaults (design section 11). Sources, later ones winning: the
// defaults here, a JSON config file (keys are the field names), command-line
// flags. Finalize() fills the defaults that depend on the host (paths next to
// the running binary, the uid to run candidates as) and validates everything,
// naming the offending field.
//
// Thread safety: a plain value; the daemon builds it once before serving and
// shares it read-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/net.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pkforge::executor {

struct ExecutorConfig {
  // --- serving
  std::string listen = "127.0.0.1:50051";  // any non-loopback address needs token_file
  std::string token_file;                  // bearer token (first line); clients send
                                           // "authorization: Bearer <token>"
  std::string tls_cert_file;               // PEM; with tls_key_file enables TLS
  std::string tls_key_file;
  std::string metrics_listen;              // HOST:PORT of the Prometheus /metrics endpoint
  std::string executor_id;                 // empty: the host name
  std::string log_format = "text";         // text | json
  std::string log_level = "info";
  double shutdown_grace_s = 30;            // in-flight evaluations get this long on SIGTERM

  // --- data
  std::string data_dir = "pkforge-data/executor";  // scratch/ and compile-cache/ live here
  int64_t cache_max_mb = 2048;

  // --- devices
  std::string gpus = "all";      // "all", "none" or a list like "0,1,2,3"
  bool measure_ceilings = true;  // measure HBM/GEMM/peer ceilings at start
  int host_slots = 1;            // host-backend evaluations run at once
  int max_host_world_size = 64;
  bool nccl_nvls_enable = false;  // NCCL_NVLS_ENABLE for the ranks (NVLink multicast)

  // --- tools (empty: found next to this binary / on PATH)
  std::string worker_path;     // pkforge-worker
  std::string cuda_rank_path;  // pkforge-cuda-rank (cuda backend, probe, health)
  std::string nvcc;            // empty: PATH, then /usr/local/cuda/bin/nvcc; "none" disables
  std::string cxx = "g++";
  std::string kernels_include;  // folder holding pkforge/candidate.h
  std::vector<std::string> extra_include_dirs;
  std::string library_path;     // LD_LIBRARY_PATH for the worker; empty: inherited
  std::string ncu_path;         // Nsight Compute CLI; empty: PATH, /usr/local/cuda/bin
  std::string sanitizer_path;   // compute-sanitizer; empty: PATH, /usr/local/cuda/bin

  // --- limits
  int compile_workers = 0;         // 0: number of cores
  int max_in_flight = 256;         // accepted Evaluate calls (compiling + queued + running)
  int64_t compile_timeout_ms = 120'000;
  double default_timeout_s = 60;   // per phase of the worker run
  double max_timeout_s = 600;
  int max_trials = 100;
  int max_iters = 10'000;
  int64_t max_source_bytes = 1 << 20;
  int64_t run_memory_mb = 32768;   // host memory cap of one evaluation's sandbox
  int64_t tmpfs_mb = 8192;         // /dev/shm + /tmp of one evaluation
  int64_t max_file_mb = 4096;      // largest file an evaluation may write

  // --- sandbox
  bool unsafe_no_sandbox = false;  // explicit operator choice, recorded in every result
  int64_t run_as_uid = -2;         // -2: 65534 (nobody) when started as root; -1: own uid
  int64_t run_as_gid = -2;
  bool run_as_auto = false;        // set by Finalize when it chose run_as_uid itself
};

// Reads a JSON object whose keys are field names above; unknown keys and
// wrongly typed values are errors naming the key.
absl::Status MergeConfigFile(const std::string& path, ExecutorConfig* config);

// Fills host-dependent defaults and validates. `self_exe` is the running
// binary (for tools next to it).
absl::Status Finalize(ExecutorConfig* config, const std::string& self_exe);

// The Nsight Compute binary to run for `path`: `path` itself (canonical)
// unless it is the CUDA toolkit's wrapper script, which picks an install at
// run time; then the newest `<root>/<version>/ncu` under `install_roots` or
// `<toolkit>/nsight-compute-<version>/ncu`. The sandbox binds the returned
// file's directory, which a wrapper script would leave unreachable.
std::string ResolveNcu(const std::string& path, const std::vector<std::string>& install_roots);

// IsLoopbackAddress (127.0.0.0/8, ::1, localhost, unix: sockets) is
// common/net.h's, shared with the orchestrator.

// Parses "0,1,3" (or "all"/"none" into an empty list plus a flag).
absl::StatusOr<std::vector<int>> ParseGpuList(const std::string& text);

}  // namespace pkforge::executor
