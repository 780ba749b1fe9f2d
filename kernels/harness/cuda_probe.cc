#include "kernels/harness/cuda_probe.h"

#include <dlfcn.h>

#include <cstring>

#include "fmt/format.h"

namespace pkforge::kernels {
namespace {

// The few driver/NVML entry points used here, declared by hand so this file
// needs no CUDA headers (it is part of the host-only pkforge_kernels).
using CuInit = int (*)(unsigned);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetAttribute = int (*)(int*, int, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDriverGetVersion = int (*)(int*);
using CuGetErrorString = int (*)(int, const char**);
constexpr int kCuAttrMultiprocessorCount = 16;
constexpr int kCuAttrL2CacheSize = 38;

using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlDeviceGetHandleByIndex = int (*)(unsigned, void**);
using NvmlDeviceGetClockInfo = int (*)(void*, int, unsigned*);
using NvmlDeviceGetTemperature = int (*)(void*, int, unsigned*);
using NvmlDeviceGetPowerUsage = int (*)(void*, unsigned*);
using NvmlDeviceGetThrottleReasons = int (*)(void*, unsigned long long*);
using NvmlSystemGetDriverVersion = int (*)(char*, unsigned);
constexpr int kNvmlClockSm = 1, kNvmlClockMem = 2, kNvmlTemperatureGpu = 0;

template <typename F>
F Sym(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

absl::StatusOr<CudaDeviceInfo> ProbeCudaDevices() {
  // Kept loaded: unloading the driver library is not supported after cuInit.
  static void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr)
    return absl::FailedPreconditionError(fmt::format(
        "backend cuda: no usable GPU: the CUDA driver library libcuda.so.1 cannot be loaded ({})",
        dlerror()));
  auto init = Sym<CuInit>(lib, "cuInit");
  auto count = Sym<CuDeviceGetCount>(lib, "cuDeviceGetCount");
  auto get = Sym<CuDeviceGet>(lib, "cuDeviceGet");
  auto attr = Sym<CuDeviceGetAttribute>(lib, "cuDeviceGetAttribute");
  auto name = Sym<CuDeviceGetName>(lib, "cuDeviceGetName");
  auto version = Sym<CuDriverGetVersion>(lib, "cuDriverGetVersion");
  auto err_str = Sym<CuGetErrorString>(lib, "cuGetErrorString");
  if (!init || !count || !get || !attr || !name || !version)
    return absl::FailedPreconditionError("backend cuda: libcuda.so.1 lacks driver entry points");
  auto describe = [&](int rc) {
    const char* s = nullptr;
    if (err_str != nullptr) err_str(rc, &s);
    return fmt::format("error {}{}{}", rc, s ? ": " : "", s ? s : "");
  };
  if (int rc = init(0); rc != 0)
    return absl::FailedPreconditionError(
        fmt::format("backend cuda: no usable GPU: cuInit failed ({})", describe(rc)));
  CudaDeviceInfo info;
  if (int rc = count(&info.device_count); rc != 0)
    return absl::FailedPreconditionError(
        fmt::format("backend cuda: no usable GPU: cuDeviceGetCount failed ({})", describe(rc)));
  if (info.device_count <= 0)
    return absl::FailedPreconditionError("backend cuda: no usable GPU: no CUDA device is visible");
  version(&info.driver_version);
  for (int i = 0; i < info.device_count; ++i) {
    int dev = 0, l2 = 0, sms = 0;
    char buf[256] = {0};
    get(&dev, i);
    attr(&l2, kCuAttrL2CacheSize, dev);
    attr(&sms, kCuAttrMultiprocessorCount, dev);
    name(buf, sizeof buf - 1, dev);
    info.l2_bytes.push_back(l2);
    info.sm_count.push_back(sms);
    info.names.push_back(buf);
  }
  return info;
}

NvmlSample SampleNvml(int count) {
  NvmlSample s;
  static void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return s;
  auto init = Sym<NvmlInit>(lib, "nvmlInit_v2");
  auto shutdown = Sym<NvmlShutdown>(lib, "nvmlShutdown");
  auto handle = Sym<NvmlDeviceGetHandleByIndex>(lib, "nvmlDeviceGetHandleByIndex_v2");
  auto clock = Sym<NvmlDeviceGetClockInfo>(lib, "nvmlDeviceGetClockInfo");
  auto temp = Sym<NvmlDeviceGetTemperature>(lib, "nvmlDeviceGetTemperature");
  auto power = Sym<NvmlDeviceGetPowerUsage>(lib, "nvmlDeviceGetPowerUsage");
  auto throttle = Sym<NvmlDeviceGetThrottleReasons>(lib, "nvmlDeviceGetCurrentClocksEventReasons");
  if (throttle == nullptr)
    throttle = Sym<NvmlDeviceGetThrottleReasons>(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
  auto driver = Sym<NvmlSystemGetDriverVersion>(lib, "nvmlSystemGetDriverVersion");
  if (!init || !handle || init() != 0) return s;
  s.available = true;
  char buf[96] = {0};
  if (driver != nullptr && driver(buf, sizeof buf - 1) == 0) s.driver_version = buf;
  for (int i = 0; i < count; ++i) {
    void* h = nullptr;
    if (handle(static_cast<unsigned>(i), &h) != 0) continue;
    GpuSample g;
    g.index = i;
    unsigned v = 0;
    if (clock && clock(h, kNvmlClockSm, &v) == 0) g.sm_clock_mhz = static_cast<int>(v);
    if (clock && clock(h, kNvmlClockMem, &v) == 0) g.mem_clock_mhz = static_cast<int>(v);
    if (temp && temp(h, kNvmlTemperatureGpu, &v) == 0) g.temperature_c = v;
    if (power && power(h, &v) == 0) g.power_w = v / 1000.0;
    unsigned long long reasons = 0;
    if (throttle && throttle(h, &reasons) == 0 && reasons != 0) {
      // nvml.h bit names (clocks event reasons).
      static const std::pair<unsigned long long, const char*> kNames[] = {
          {0x1, "gpu_idle"}, {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
          {0x8, "hw_slowdown"}, {0x10, "sync_boost"}, {0x20, "sw_thermal"},
          {0x40, "hw_thermal"}, {0x80, "hw_power_brake"}, {0x100, "display_clocks"}};
      for (const auto& [bit, n] : kNames)
        if (reasons & bit) g.throttle_reasons += (g.throttle_reasons.empty() ? "" : ",") + std::string(n);
    }
    s.gpus.push_back(g);
  }
  if (shutdown) shutdown();
  return s;
}

}  // namespace pkforge::kernels
