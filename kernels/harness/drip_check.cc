#include "kernels/harness/drip_check.h"

#include <algorithm>

#include "common/stats.h"
#include "fmt/format.h"

namespace pkforge::kernels {

namespace {
constexpr double kNoiseUs = 3.0;
constexpr double kHandoffShare = 0.5;
// cuda: hand-offs of a few staged copies between a rank and its watcher on
// one CPU of a host with CPUs to spare, every GPU operation in the calls'
// own context: steadier than the host backend's on 2 shared CPUs. H100,
// 2026-12-06 (world 1, tiny allreduce, hand-offs ~18 us a call): six honest
// candidates (the reference itself, one NCCL call, one copy, one kernel, a
// CUDA graph, the naive one) read -0.4..+0.6 us of excess over the
// reference's, the two launch amortizers (r15_chunk_k8, 1.3-1.5 us a call
// free-running; r15_persistent_mailbox, 1.0 us) +2.1..+7.6 us.
// No "twice its free time" term on cuda: a launch amortizer chooses its
// free-running time, and under max(cand_free, ...) one padded to ~1.8 us a
// call kept its dripped excess under that limit (red team round 28
// r28_chunk_paced, predicted OK at ~1.6x the honest kernel). A share of the
// reference's free time (which the candidate cannot choose) for longer calls.
constexpr double kCudaNoiseUs = 1.0;
constexpr double kCudaHandoffShare = 0.02;
constexpr double kCudaRefFreeShare = 0.05;
constexpr double kCudaShortFreeShare = 0.15;
}  // namespace

DripFinding ClassifyDrip(const DripSample& s, double ref_free_us, double cand_free_us,
                         double cand_free_low_us) {
  // Load only ever adds to a free-running time (one busy batch can get a
  // time slice of another process, a drip's sleep-wake calls do not), and a
  // larger one shrinks the hand-off cost estimated from it: the smaller of
  // the batch next to the drip and the timed batches' figure.
  if (s.ref_free_us > 0) ref_free_us = std::min(ref_free_us, s.ref_free_us);
  if (s.starved || s.calls < kMinDripCalls || s.ref_service_us <= 0 || s.cand_service_us <= 0 || cand_free_us <= 0)
    return DripFinding::kInconclusive;
  // The reference's calls cannot be faster dripped (each handed over twice)
  // than free-running: its free-running batches were disturbed, so the
  // hand-off cost is unknown (helper-redteam11, world 1 beside a hog on the
  // ranks' CPU: free 24 us a call against 9 us dripped, the hand-off read 0
  // and honest candidates CHEAT_DETECTED).
  if (s.ref_service_us <= ref_free_us) return DripFinding::kInconclusive;
  const double handoff = std::max(0.0, s.ref_service_us - ref_free_us);
  const double excess = (s.cand_service_us - cand_free_us) - handoff;
  const double limit =
      s.cuda ? kCudaNoiseUs + kCudaHandoffShare * handoff + kCudaRefFreeShare * ref_free_us
             : std::max(cand_free_us, kHandoffShare * handoff + kNoiseUs);
  if (excess > limit) return DripFinding::kSlow;
  // cuda: the calls' side of the hand-off runs in the candidate's process.
  // What of the reference's hand-off is not its call (the staging copies,
  // the waits, the watcher: ref_floor_us) every call pays, however
  // fast: a candidate's dripped call less its free-running time cannot be
  // under it (an honest call alone takes at least its free-running time).
  // Under it by more than the allowance, the harness's part was skipped (red
  // team round 28 r28_drip_agent: the candidate's first call does the
  // batch's hand-offs itself, no staging copies, ~10 us a call less, which
  // hides a launch amortizer's excess). Not the reference's whole hand-off:
  // a candidate that waits for its work inside its call leaves the harness's
  // synchronize nothing to wait for. Against the candidate's low quantile
  // of free-running times, less 15% of it (red team round 30, finding 4: a
  // median raised by load, inputs warm in L2 when dripped right after their
  // copy: an honest call alone a little under its free-running median).
  // Not on the host backend: its hand-offs on 2 shared CPUs are not that
  // steady, and its floor is not measured.
  if (s.cuda && s.ref_floor_us > 0) {
    const double floor = s.ref_floor_us;
    const double low =
        cand_free_low_us > 0 ? std::min(cand_free_low_us, cand_free_us) : cand_free_us;
    if (s.cand_service_us - low < floor - limit - kCudaShortFreeShare * low)
      return DripFinding::kShort;
  }
  return DripFinding::kConsistent;
}

DripVerdict JudgeDrip(const std::vector<DripSample>& samples, double ref_free_us,
                      double cand_free_us, double cand_free_low_us) {
  DripVerdict v;
  for (const DripSample& s : samples) {
    const DripFinding f = ClassifyDrip(s, ref_free_us, cand_free_us, cand_free_low_us);
    v.slow += f == DripFinding::kSlow;
    v.short_calls += f == DripFinding::kShort;
    v.conclusive += f != DripFinding::kInconclusive;
    if (!v.detail.empty()) v.detail += "; ";
    v.detail += fmt::format(
        "candidate {:.2f} us per call, reference {:.2f} us (free {:.2f}{}) ({})", s.cand_service_us,
        s.ref_service_us, s.ref_free_us > 0 ? s.ref_free_us : ref_free_us,
        s.cuda && s.ref_floor_us > 0
            ? fmt::format(", hand-off without its call {:.2f}", s.ref_floor_us)
            : "",
        f == DripFinding::kSlow           ? "slow"
        : f == DripFinding::kShort        ? "shorter than its hand-off"
        : f == DripFinding::kInconclusive ? "inconclusive"
                                          : "consistent");
  }
  const int odd = v.slow + v.short_calls;
  v.cheat = odd >= 2 && 4 * odd >= 3 * v.conclusive;
  v.flag = odd >= 1 && !v.cheat;
  return v;
}

double RefHandOffFloorUs(const std::vector<int64_t>& gap_ns, const std::vector<int64_t>& call_ns) {
  double floor = 0;
  bool seen = false;
  for (size_t i = 0; i < gap_ns.size() && i < call_ns.size(); ++i) {
    if (call_ns[i] <= 0) continue;
    // A rank whose call alone took its whole gap leaves no floor (0): the
    // least over the ranks, never a larger one instead.
    const double f = std::max(0.0, static_cast<double>(gap_ns[i] - call_ns[i]) / 1e3);
    floor = seen ? std::min(floor, f) : f;
    seen = true;
  }
  return floor;
}

DripFree FreeTimes(const std::vector<double>& ref_us, const std::vector<double>& cand_us) {
  if (ref_us.empty() || cand_us.empty()) return {};
  return {*std::min_element(ref_us.begin(), ref_us.end()), pkforge::Quantile(cand_us, 0.5),
          pkforge::Quantile(cand_us, 0.25)};
}

}  // namespace pkforge::kernels
