// Order statistics shared by the benchmarks, pkforge-worker and the plateau
// analysis (one copy; the judge's timing statistics are kernels/harness/stats.h).
//
// Thread safety: pure functions, safe from any thread.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace pkforge {

// The q-quantile (q clamped to [0, 1]) by linear interpolation between the
// closest order statistics (numpy's default), so p90 of a small sample is not
// just its maximum. 0 for an empty sample.
inline double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double h = static_cast<double>(values.size() - 1) * std::clamp(q, 0.0, 1.0);
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (h - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

}  // namespace pkforge
