// What the judge needs to know about the GPUs without linking CUDA: the
// driver (libcuda.so.1) and NVML (libnvidia-ml.so.1) are loaded with dlopen at
// run time, so pkforge-worker starts fast and runs on machines without a GPU
// (the host backend never touches either library).
// Thread safety: each call loads/initialises the libraries itself; call from
// one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pkforge::kernels {

struct CudaDeviceInfo {
  int device_count = 0;
  int driver_version = 0;                  // e.g. 13000
  std::vector<int64_t> l2_bytes;           // per device (cudaDevAttrL2CacheSize)
  std::vector<int> sm_count;               // per device
  std::vector<std::string> names;          // per device
};

// Fails with FAILED_PRECONDITION and a clear message when there is no driver,
// cuInit fails (no GPU, driver/toolkit mismatch) or no device is visible.
absl::StatusOr<CudaDeviceInfo> ProbeCudaDevices();

struct GpuSample {
  int index = 0;
  int sm_clock_mhz = 0;
  int mem_clock_mhz = 0;
  double temperature_c = 0;
  double power_w = 0;
  std::string throttle_reasons;
};

struct NvmlSample {
  bool available = false;  // false when libnvidia-ml.so.1 is missing (not an error)
  std::string driver_version;
  std::vector<GpuSample> gpus;
};

// Samples devices 0..count-1 (NVML indices; equal to CUDA indices unless
// CUDA_VISIBLE_DEVICES reorders them).
NvmlSample SampleNvml(int count);

}  // namespace pkforge::kernels
