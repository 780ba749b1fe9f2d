// Nominal per-GPU ceilings (vendor datasheets, dense): HBM bandwidth, NVLink
// bandwidth per direction, peak FLOP/s for bf16/f16 and for f32 (without
// TF32). The one table behind the judge's roofline (judge.cc) and the
// ceilings `pkforge-cuda-rank probe` reports when it does not measure
// (cuda/probe_cuda.cc); they each had a copy. Unknown devices get the H100
// SXM numbers. The roofline is a ceiling, so nominal (not measured) numbers
// only make "% of roofline" conservative.
//
// Thread safety: constant data and a pure lookup, safe from any thread.
#pragma once

#include <string_view>

#include "pkforge/candidate.h"

namespace pkforge::kernels {

struct GpuCeilings {
  const char* key;  // matched as a substring of the device name
  double hbm_gbps;
  double link_gbps;   // NVLink, per direction
  double bf16_flops;  // also f16 (and anything that is not f32)
  double f32_flops;
  double flops(pkf_dtype dtype) const { return dtype == PKF_F32 ? f32_flops : bf16_flops; }
};

// Order matters: the first key found in the name wins ("H200" before "H100").
inline constexpr GpuCeilings kGpuCeilings[] = {
    {"H200", 4800, 450, 989e12, 67e12},
    {"B200", 8000, 900, 2250e12, 80e12},
    {"A100", 2039, 300, 312e12, 19.5e12},
    {"H100", 3350, 450, 989e12, 67e12},
};
inline constexpr const GpuCeilings& kDefaultGpuCeilings = kGpuCeilings[3];  // H100 SXM

inline const GpuCeilings& GpuCeilingsFor(std::string_view device_name) {
  for (const GpuCeilings& c : kGpuCeilings) {
    if (device_name.find(c.key) != std::string_view::npos) return c;
  }
  return kDefaultGpuCeilings;
}

}  // namespace pkforge::kernels
