#include "kernels/harness/progress_probe.h"

#include <algorithm>
#include <cmath>

#include "common/stats.h"
#include "fmt/format.h"

namespace pkforge::kernels {

namespace {
constexpr double kMinElapsed = 0.3;   // earlier, wake-up and the first call weigh too much
constexpr double kBehindShare = 0.25; // of the calls an honest candidate has done by then
constexpr double kAheadElapsed = 0.5; // every call done by half the fastest batch's time
constexpr double kAllDone = 0.999;
constexpr double kOwnThreadsIdleShare = 0.1;  // AttributeProbeWait
}  // namespace

double BehindElapsed(const ProgressSample& s) {
  return std::max(0.0, s.elapsed - s.start_allowance);
}

ProgressFinding ClassifyProgress(const ProgressSample& s) {
  if (!s.replies_pending || s.late_stop || s.calls < kMinProbeCalls)
    return ProgressFinding::kInconclusive;
  // A main thread that woke late or waited for a CPU can only make a probe
  // look behind, never ahead: ahead stays evidence whatever the excuses
  // (red team round 16 r16_parked_leader_capped: every probe main_idle,
  // ahead, excused below the idle gate).
  if (s.done >= kAllDone && s.elapsed <= kAheadElapsed) return ProgressFinding::kAhead;
  if (s.starved || s.main_idle) return ProgressFinding::kInconclusive;
  const double elapsed = BehindElapsed(s);
  if (elapsed < kMinElapsed) return ProgressFinding::kInconclusive;
  // The call in progress at the stop counts as done: behind means even one
  // more call would leave it under a quarter of the honest share.
  if (s.done + 1.0 / std::max(s.calls, 1) < kBehindShare * std::min(elapsed, 1.0))
    return ProgressFinding::kBehind;
  return ProgressFinding::kConsistent;
}

ProbeLoad AttributeProbeWait(double share, double least, double used, double other_cpu_ns,
                             double window_ns, bool single_host_rank) {
  ProbeLoad l;
  l.own_threads_idle = single_host_rank && other_cpu_ns < kOwnThreadsIdleShare * window_ns;
  const bool waited = share > least + kStarvedShare;
  l.starved = waited && (used < 0.5 || l.own_threads_idle);
  l.own_load = waited && !l.starved;
  return l;
}

bool StarvedAlthoughReferenceWasNot(const ProgressSample& probe) {
  return probe.starved && probe.own_threads_idle;
}

std::vector<ProgressSample> WithoutIdleExcuse(std::vector<ProgressSample> samples) {
  for (ProgressSample& s : samples) {
    s.idle_unexcused = s.idle_unexcused || s.main_idle;
    s.main_idle = false;
  }
  return samples;
}

std::vector<ProgressSample> ProbesAsJudged(const std::vector<ProgressSample>& probes,
                                           const std::vector<double>& ref_us,
                                           const std::vector<double>& cand_us) {
  const bool fast = !ref_us.empty() && !cand_us.empty() &&
                    kIdleExcuseLimit * pkforge::Quantile(cand_us, 0.5) <
                        pkforge::Quantile(ref_us, 0.5);
  return fast ? WithoutIdleExcuse(probes) : probes;
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

double BinomialTail(int n, int k, double q) {
  if (k <= 0) return 1.0;
  if (k > n) return 0.0;
  // P(X >= k) for X ~ Binomial(n, q), summed in logs (n is tens at most).
  double tail = 0;
  for (int i = k; i <= n; ++i)
    tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) +
                     i * std::log(q) + (n - i) * std::log1p(-q));
  return std::min(1.0, tail);
}

bool ProgressSettled(const std::vector<ProgressSample>& samples, int wanted, bool ahead_convicts) {
  const ProgressVerdict v = JudgeProgress(samples, ahead_convicts);
  // Twice the probes wanted and not one conclusive: more will not be either
  // (batches whose stops always come late, e.g. ~150 us at world size 1,
  // tiny); the check says "not judged". Extending to the cap there cost
  // kernels_host_test ~50 s (210 evaluations).
  if (v.conclusive == 0 && v.ahead_only == 0 && samples.size() >= 2 * static_cast<size_t>(wanted))
    return true;
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
      if (!ahead_convicts && f == ProgressFinding::kBehind && s.done < kStallDone &&
          BehindElapsed(s) >= kStallElapsed)
        ++v.stalled;
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
                            : s.idle_unexcused
                                ? ", its main threads had hardly run (no excuse: faster "
                                  "than the reference)"
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
  // Or, over many probes (the schedule extends while they are mixed), a
  // count of anomalous ones an honest candidate would show with chance
  // under kHonestTail even if each of its probes were anomalous with chance
  // kHonestAnomaly (10x what this 2-core host showed honest candidates
  // under other load: 5 behind probes in ~950, red team round 13): chunked
  // fusion reads behind on ~40-60% of its probes and consistent on the
  // rest (round 13 probe_gap_fuse: 9 of 16 behind, OK at 11.9x while the
  // ratios above only flagged).
  // Or, on cuda, stalled probes (progress_probe.h, kHonestStall): whole-batch
  // fusion, next to nothing done until everything is.
  v.cheat = (bad >= 2 && 4 * bad >= 3 * conclusive) || (bad >= 4 && 3 * bad >= 2 * conclusive) ||
            (bad >= 4 && BinomialTail(conclusive, bad, kHonestAnomaly) < kHonestTail) ||
            (v.stalled >= 4 && BinomialTail(conclusive, v.stalled, kHonestStall) < kHonestTail);
  v.ahead_only = ahead_only;
  v.flag = (bad >= 1 || ahead_only >= 1) && !v.cheat;
  return v;
}

}  // namespace pkforge::kernels
