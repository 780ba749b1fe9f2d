#include "kernels/harness/progress_probe.h"

#include <algorithm>

#include "fmt/format.h"

namespace pkforge::kernels {

namespace {
constexpr double kMinElapsed = 0.3;   // earlier, wake-up and the first call weigh too much
constexpr double kBehindShare = 0.25; // of the calls an honest candidate has done by then
constexpr double kAheadElapsed = 0.5; // every call done by half the fastest batch's time
constexpr double kAllDone = 0.999;
}  // namespace

ProgressFinding ClassifyProgress(const ProgressSample& s) {
  if (!s.replies_pending || s.starved || s.main_idle || s.late_stop || s.calls < kMinProbeCalls)
    return ProgressFinding::kInconclusive;
  if (s.done >= kAllDone && s.elapsed <= kAheadElapsed) return ProgressFinding::kAhead;
  if (s.elapsed < kMinElapsed) return ProgressFinding::kInconclusive;
  // The call in progress at the stop counts as done: behind means even one
  // more call would leave it under a quarter of the honest share.
  if (s.done + 1.0 / std::max(s.calls, 1) < kBehindShare * std::min(s.elapsed, 1.0))
    return ProgressFinding::kBehind;
  return ProgressFinding::kConsistent;
}

const char* ProgressFindingName(ProgressFinding f) {
  switch (f) {
    case ProgressFinding::kConsistent: return "consistent";
    case ProgressFinding::kBehind: return "behind";
    case ProgressFinding::kAhead: return "ahead";
    case ProgressFinding::kInconclusive: return "inconclusive";
  }
  return "?";
}

bool ProgressSettled(const std::vector<ProgressSample>& samples, int wanted, bool ahead_convicts) {
  const ProgressVerdict v = JudgeProgress(samples, ahead_convicts);
  if (v.conclusive < wanted) return false;
  if (v.anomalous == 0) return true;
  if (!v.cheat) return false;
  // A conviction stands once kConfirmProbes more probes came after the
  // first moment it held: a fuser's later probes are anomalous too, while a
  // burst of other load that made an honest candidate's probes read behind
  // passes (red team round 13: control_flag_epoch convicted once in 190
  // launches on probes behind, consistent, behind, behind, with another
  // build running).
  size_t first = samples.size();
  for (size_t n = 1; n <= samples.size(); ++n) {
    const std::vector<ProgressSample> prefix(samples.begin(), samples.begin() + n);
    if (JudgeProgress(prefix, ahead_convicts).cheat) {
      first = n;
      break;
    }
  }
  return samples.size() >= first + kConfirmProbes;
}

ProgressVerdict JudgeProgress(const std::vector<ProgressSample>& samples, bool ahead_convicts) {
  ProgressVerdict v;
  int bad = 0, conclusive = 0, ahead_only = 0;
  for (const ProgressSample& s : samples) {
    const ProgressFinding f = ClassifyProgress(s);
    if (f == ProgressFinding::kAhead && !ahead_convicts) {
      ++ahead_only;  // flags, never convicts (see the header)
    } else {
      if (f == ProgressFinding::kBehind || f == ProgressFinding::kAhead) ++bad;
      // Anomalies must also be most of the conclusive probes: load from
      // other processes can slow an honest candidate on one probe, not on
      // nearly all.
      if (f != ProgressFinding::kInconclusive) ++conclusive;
    }
    if (!v.detail.empty()) v.detail += "; ";
    v.detail += fmt::format("{:.0f}% of the batch's time: {:.0f}% of the calls done ({}{})",
                            100 * s.elapsed, 100 * s.done, ProgressFindingName(f),
                            s.late_stop   ? ", the stop took hold late"
                            : s.main_idle ? ", its calls' threads had hardly run"
                            : s.own_load && f != ProgressFinding::kInconclusive
                                ? ", its own threads held the CPUs its calls waited for"
                                : "");
  }
  v.anomalous = bad;
  v.conclusive = conclusive;
  // Or, over more probes (mixed findings get more), at least four anomalous
  // and 2/3 of the conclusive ones: a fuser stopped late in a batch, when
  // it is copying out what it computed at once, looks consistent (red team
  // round 6 drip_aware_fuse: 5 of 7 behind, a flag, at 12.3x).
  v.cheat = (bad >= 2 && 4 * bad >= 3 * conclusive) || (bad >= 4 && 3 * bad >= 2 * conclusive);
  v.ahead_only = ahead_only;
  v.flag = (bad >= 1 || ahead_only >= 1) && !v.cheat;
  return v;
}

}  // namespace pkforge::kernels
