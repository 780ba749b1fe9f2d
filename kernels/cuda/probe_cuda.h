// Device facts and the GPU health check for the executor daemon, as two
// subcommands of pkforge-cuda-rank (the daemon never links CUDA, so a GPU
// fault cannot take it down; it runs these as child processes):
//
//   pkforge-cuda-rank probe [--measure] [--gpus 0,1,...] [--timeout-ms T]
//     One line of proto3 JSON (MessageToJsonString) of pkforge.v1.DeviceInfo
//     on stdout: gpus, topology (every ordered pair), ceilings (measured with
//     --measure, else from a table by GPU name), versions, backends,
//     usable_gpus. Exit 0; on any CUDA/cuBLAS error or timeout exit 1 with one
//     line on stderr; bad arguments exit 2.
//   pkforge-cuda-rank health --gpu N [--timeout-ms T]
//     A small known kernel plus a device-to-device copy on GPU N, verified on
//     the host. Healthy: `healthy gpu N <name>` on stdout, exit 0. Otherwise
//     `unhealthy gpu N: <reason>` on stderr, exit 1 (2: bad arguments).
//
// Both are bounded by a watchdog thread that _exits after --timeout-ms
// (whatever the GPU does, e.g. a hung context after a candidate's fault).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pkforge/v1/common.pb.h"

namespace pkforge::kernels::cuda {

struct ProbeOptions {
  bool measure = false;
  std::vector<int> gpus;   // CUDA device ordinals; empty: every visible device
  int timeout_ms = 60000;  // whole probe (8 GPUs with --measure take a few s)
};

struct HealthOptions {
  int gpu = -1;
  // Generous by default: a cold driver (no persistence daemon) can take
  // seconds to create a context; the check itself takes milliseconds.
  int timeout_ms = 10000;
};

// Describes the selected GPUs; with `measure`, also measures HBM copy
// bandwidth and bf16 GEMM throughput on the first selected GPU and peer copy
// bandwidth of every ordered pair. Not thread-safe (sets the current device).
absl::StatusOr<pkforge::v1::DeviceInfo> ProbeDevices(const ProbeOptions& options);

// Runs the known kernel on `gpu`; OK when the result is exact and no CUDA
// call failed. `name` receives the device name when it could be read.
absl::Status CheckGpuHealth(int gpu, std::string* name);

// Registration in pkforge-cuda-rank's main (rank_cuda.cc).
struct ProbeCommands {
  CLI::App* probe = nullptr;
  CLI::App* health = nullptr;
  ProbeOptions probe_options;
  HealthOptions health_options;
};
void AddProbeCommands(CLI::App* app, ProbeCommands* commands);
// The exit code when `probe` or `health` was the parsed subcommand.
std::optional<int> RunProbeCommands(const ProbeCommands& commands);

}  // namespace pkforge::kernels::cuda
