// Devices: what DescribeDevice reports and the GPU health check.
//
// The executor never links CUDA. GPU facts and measured ceilings come from
// `pkforge-cuda-rank probe [--measure]`, the health check ("a small known
// kernel") from `pkforge-cuda-rank health --gpu N`, each a sandboxed child
// process with the GPU device nodes, so a wedged GPU or driver fault costs a
// failed child, never the daemon. Host facts (cores, memcpy bandwidth) are
// measured in-process at start.
//
// Thread safety: Describe/CheckGpu/Remeasure may be called from any thread;
// the cached description is guarded by a mutex; Remeasure runs one probe at a
// time.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "executor/device_queue.h"
#include "executor/runtime.h"
#include "pkforge/v1/common.pb.h"

namespace pkforge::executor {

class Devices {
 public:
  // Probes (and with config.measure_ceilings measures) the GPUs named by
  // config.gpus. No GPU (no /dev/nvidia0, no pkforge-cuda-rank, gpus "none")
  // is not an error: the executor then serves the host backend only. A probe
  // that fails on a machine with GPUs is an error (the operator must know).
  static absl::StatusOr<std::unique_ptr<Devices>> Create(const Runtime* runtime,
                                                         const std::string& scratch_parent);

  // GPU indices (CUDA ordinals) this executor serves.
  const std::vector<int>& gpus() const { return gpus_; }
  bool cuda_available() const { return !gpus_.empty(); }

  // The cached description, with live health and queue length from `queue`.
  v1::DeviceInfo Describe(const DeviceQueue& queue) const;
  // Re-runs the measurements (DescribeDevice with remeasure).
  absl::Status Remeasure();

  // Runs the known kernel on one GPU; OK when healthy.
  absl::Status CheckGpu(int gpu) const;

  // Sets the sandbox/toolkit facts that the caller knows (compiler versions).
  void SetToolkit(const std::string& cuda_toolkit, const std::string& sandbox_mode,
                  const std::string& sandbox_detail);

 private:
  Devices(const Runtime* runtime, std::string scratch_parent)
      : runtime_(runtime), scratch_parent_(std::move(scratch_parent)) {}
  absl::StatusOr<v1::DeviceInfo> Probe(bool measure) const;

  const Runtime* runtime_;
  std::string scratch_parent_;
  std::vector<int> gpus_;
  mutable std::mutex mu_;
  v1::DeviceInfo info_;
  std::mutex remeasure_mu_;
};

// Host memcpy bandwidth in GB/s (read + write bytes, like hbm_gbps).
double MeasureHostMemcpyGbps();

}  // namespace pkforge::executor
