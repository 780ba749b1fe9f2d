#include "kernels/harness/stats.h"

#include <algorithm>
#include <cmath>

namespace pkforge::kernels {

namespace {
double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * (sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}
}  // namespace

TimingStats_ ComputeStats(std::vector<double> v) {
  TimingStats_ s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.samples = static_cast<int>(v.size());
  s.median = Quantile(v, 0.5);
  s.p10 = Quantile(v, 0.1);
  s.p90 = Quantile(v, 0.9);
  s.min = v.front();
  s.max = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / v.size();
  double var = 0;
  for (double x : v) var += (x - s.mean) * (x - s.mean);
  s.cv = s.mean > 0 ? std::sqrt(var / v.size()) / s.mean : 0;
  return s;
}

void FillStats(const TimingStats_& s, const std::vector<double>& samples,
               pkforge::v1::TimingStats* out) {
  out->set_median_us(s.median);
  out->set_mean_us(s.mean);
  out->set_p10_us(s.p10);
  out->set_p90_us(s.p90);
  out->set_min_us(s.min);
  out->set_max_us(s.max);
  out->set_cv(s.cv);
  out->set_samples(s.samples);
  for (double x : samples) out->add_samples_us(x);
}

}  // namespace pkforge::kernels
