#include "kernels/harness/shape_family.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_split.h"
#include "common/status.h"
#include "fmt/format.h"
#include "kernels/harness/eval_validation.h"
#include "kernels/harness/rng.h"

namespace pkforge::kernels {
namespace {

// FNV-1a of a name, so the problem and the base size take part in the draw.
uint64_t Fnv(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

int64_t Quantum(int64_t v) {
  int64_t pow2 = v & -v;  // largest power of two dividing v
  return std::max<int64_t>(1, std::min(pow2, v / 8));
}

double Uniform01(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

}  // namespace

absl::StatusOr<Dims> DrawHiddenDims(const Problem& p, std::string_view size, int world,
                                    uint64_t seed) {
  ASSIGN_OR_RETURN(Dims base, ResolveSize(p, size, world));
  const double base_bytes = EstimateMemory(p, base, world, PKF_F32, kDefaultTrials).host_bytes;
  const uint64_t key = SplitMix64(seed ^ SplitMix64(Fnv(p.name) ^ Fnv(DimsToString(base)) ^
                                                    static_cast<uint64_t>(world)));
  constexpr int kPerStrategy = 128;
  constexpr int kStrategies = 3;  // quantum, lcm(quantum, world), lcm(quantum, world^2)
  for (int attempt = 0; attempt < kPerStrategy * kStrategies; ++attempt) {
    const int strategy = attempt / kPerStrategy;
    Dims d = base;
    uint64_t i = 0;
    for (auto& [name, v] : d) {
      ++i;
      if (v <= 1) continue;  // a dimension of 1 is structural (no family around it)
      const uint64_t bits = SplitMix64(key + (uint64_t(attempt) << 16) + i);
      // Each dimension picks its own rounding up to the attempt's strategy, so
      // one constrained dimension (divisible by the world size) does not pin
      // the free ones.
      const int variant = static_cast<int>((bits & 0xff) % static_cast<uint64_t>(strategy + 1));
      int64_t q = Quantum(v);
      if (variant >= 1) q = std::lcm(q, static_cast<int64_t>(world));
      if (variant >= 2) q = std::lcm(q, static_cast<int64_t>(world) * world);
      const double f = kHiddenScaleLo + (kHiddenScaleHi - kHiddenScaleLo) * Uniform01(bits);
      const int64_t r = std::llround(static_cast<double>(v) * f / static_cast<double>(q)) * q;
      v = std::max(q, r);
    }
    if (d == base || !p.validate(d, world).ok()) continue;
    if (EstimateMemory(p, d, world, PKF_F32, kDefaultTrials).host_bytes > 2.5 * base_bytes) continue;
    return d;
  }
  return absl::FailedPreconditionError(
      fmt::format("{} at {} with world size {}: no valid hidden shape differs from it", p.name,
                  DimsToString(base), world));
}

absl::StatusOr<double> GeometricMeanSpeedup(const std::vector<double>& speedups) {
  if (speedups.empty()) return absl::InvalidArgumentError("no speedups to average");
  double log_sum = 0;
  for (double s : speedups) {
    if (!(s > 0) || !std::isfinite(s))
      return absl::InvalidArgumentError(fmt::format("speedup {} is not a positive number", s));
    log_sum += std::log(s);
  }
  return std::exp(log_sum / static_cast<double>(speedups.size()));
}

absl::StatusOr<std::vector<std::string>> ParseSizeLadder(std::string_view list) {
  std::vector<std::string> out;
  for (absl::string_view s : absl::StrSplit(AsAbsl(list), ',')) {
    const std::string size(s);
    if (!IsSizePreset(size))
      return absl::InvalidArgumentError(
          fmt::format("size ladder: {} is not a size preset (tiny, default, large)", ClientText(size)));
    if (std::find(out.begin(), out.end(), size) != out.end())
      return absl::InvalidArgumentError(fmt::format("size ladder: '{}' is listed twice", size));
    out.push_back(size);
  }
  return out;
}

}  // namespace pkforge::kernels
