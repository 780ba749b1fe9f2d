#include "kernels/harness/timing_schedule.h"

#include <algorithm>
#include <utility>

namespace pkforge::kernels {

double TimingSchedule::ProbeChance(int samples) {
  const double expected = std::max(5.0, samples / 2.0);
  return expected / (expected + std::max(1, samples - 1));
}

TimingSchedule::TimingSchedule(const Params& p, std::function<uint64_t()> rand)
    : rand_(std::move(rand)), warmup_left_(std::max(0, p.warmup)) {
  // A secret 0-2 more samples than asked: a candidate that knows the options
  // cannot tell where the planned slots end and an extension begins.
  samples_wanted_ = std::max(1, p.samples) + static_cast<int>(rand_() % 3);
  const int shorts = std::max(0, p.shorts), drips = std::max(0, p.drips);
  planned_ = samples_wanted_ + shorts + drips;
  chance_ = ProbeChance(samples_wanted_);
  // At least one sample stays: shorts and drips take distinct slots.
  while (static_cast<int>(shorts_.size()) < shorts)
    shorts_.insert(static_cast<int>(rand_() % static_cast<uint64_t>(planned_)));
  while (static_cast<int>(drips_.size()) < drips) {
    const int k = static_cast<int>(rand_() % static_cast<uint64_t>(planned_));
    if (shorts_.count(k) == 0) drips_.insert(k);
  }
}

bool TimingSchedule::DrawProbe() {
  if (probes_ >= kMaxProbes) return false;
  return static_cast<double>(rand_() % 1'000'000) < 1e6 * chance_;
}

TimingSchedule::Kind TimingSchedule::Next(bool can_probe,
                                          const std::function<bool()>& probes_settled,
                                          const std::function<bool()>& drips_settled) {
  last_planned_ = false;
  if (warmup_left_ > 0) {
    --warmup_left_;
    return Kind::kWarmup;
  }
  if (slot_ < planned_) {
    if (shorts_.count(slot_) > 0) {
      ++slot_;
      return Kind::kShort;
    }
    if (drips_.count(slot_) > 0) {
      ++slot_;
      return Kind::kDrip;
    }
    if (can_probe && DrawProbe()) {
      ++probes_;
      return Kind::kProbe;
    }
    ++slot_;
    ++samples_;
    last_planned_ = ++planned_samples_ == samples_wanted_;
    return Kind::kSample;
  }
  const bool extend = extra_probes_ < kExtraProbes && extension_ < kExtensionSlots && can_probe &&
                      !probes_settled();
  if (extend) {
    ++extension_;
    if (DrawProbe()) {
      ++probes_;
      ++extra_probes_;
      return Kind::kProbe;
    }
    ++samples_;
    return Kind::kSample;
  }
  if (extra_drips_ < kExtraDrips && !drips_settled()) {
    ++extra_drips_;
    return Kind::kDrip;
  }
  return Kind::kDone;
}

}  // namespace pkforge::kernels
