// Timing statistics (pure functions, thread-safe).
#pragma once

#include <vector>

#include "pkforge/v1/common.pb.h"

namespace pkforge::kernels {

struct TimingStats_ {
  double median = 0, mean = 0, p10 = 0, p90 = 0, min = 0, max = 0, cv = 0;
  int samples = 0;
};

// Percentiles by linear interpolation between order statistics.
TimingStats_ ComputeStats(std::vector<double> samples_us);
void FillStats(const TimingStats_& s, const std::vector<double>& samples_us,
               pkforge::v1::TimingStats* out);

}  // namespace pkforge::kernels
