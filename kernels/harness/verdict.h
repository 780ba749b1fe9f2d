// The numbers of a finished evaluation: statistics of its timed batches and
// its roofline (kernels/harness/judge.h runs the evaluation; judge.cc's
// Timing() collects the samples, Finish() calls these in order).
//
// Official times are the judge's own clock over batches of back-to-back
// calls, in microseconds per call, with the reference side's smallest empty
// round trip subtracted. What the rank processes reported about themselves
// is kept beside them only for the cross-checks (checks.h); it never becomes
// an official time.
//
// The roofline is the least time one call could take at the ceilings in use:
// those the executor measured where given (LaunchOptions hbm_gbps, link_gbps,
// tflops), else the built-in per-GPU table (cuda, ceilings.h) or a memcpy the
// judge measured before any candidate code ran (host; a nominal 10 GFLOP/s).
// A candidate faster than 10x the reference or beyond the roofline is
// flagged suspicious (speedup_plausibility, flag only).
//
// Thread safety: pure functions of their arguments (MeasureMemcpyGbps also
// allocates 64 MiB); the Outcome and result they write belong to the caller.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/harness/drip_check.h"
#include "kernels/harness/judge.h"
#include "kernels/harness/outcome.h"
#include "kernels/harness/progress_probe.h"
#include "kernels/harness/problem.h"
#include "kernels/harness/stats.h"
#include "pkforge/candidate.h"
#include "pkforge/v1/common.pb.h"

namespace pkforge::kernels {

// What the timing phase measured, us per call.
struct TimingSamples {
  // Official: the judge's clock, one entry per long timed batch.
  std::vector<double> ref_us, cand_us;
  std::vector<bool> ref_first;  // per long timed batch: the reference ran first
  // What the ranks reported (max over ranks; a cross-check only).
  std::vector<double> ref_rep_us, cand_rep_us;
  // Candidate per-call times less the time its rank threads waited for a CPU
  // (cross-check only, never an official time).
  std::vector<double> cand_unqueued_us;
  // Short timed batches (us per call after the round trip): the batch
  // consistency cross-check only.
  std::vector<double> ref_short_walls, cand_short_walls;
  // Progress probes (progress_probe.h): one per probed batch.
  std::vector<ProgressSample> progress;
  // Drip batches (drip_check.h, host): one per drip batch pair.
  std::vector<DripSample> drip;
  double drip_ms = 0;  // the judge's time in drip batch pairs (their cost, reported)
  uint32_t short_len = 0;  // calls per short batch
  uint32_t batch = 1;      // calls per timed batch
  double overhead_us = 0;  // the reference side's smallest empty round trip
  // host: reference timed batches run again (kRefDisturbed in
  // judge_internal.h), and how many were timed.
  int ref_reruns = 0, ref_batches = 0;
};

// Statistics of the official times, and the medians of what the ranks
// reported about themselves.
struct TimingSummary {
  TimingStats_ ref, cand;
  double ref_rep = 0, cand_rep = 0;
};

// Fills the result's reference and candidate timing stats (with every
// sample when iters <= 200) and returns them.
TimingSummary SummarizeTiming(const TimingSamples& s, int iters,
                              pkforge::v1::EvaluationResult* result);

// The candidate's official per-call time: the median of its timed batches,
// or, when a check of how its batches' calls were done flagged them
// (`batches_flagged`: batch_progress, batch_drip or batch_consistency failed
// without convicting), their 75th percentile. A candidate that amortizes
// work over only some of its batches (red team round 10 probe_window_front:
// the batches it expects no probe on) moves the median once half of them
// are fused, while the probes convict only when 3/4 of the conclusive ones
// are anomalous; the 75th percentile needs 3/4 fused to move. An honest
// candidate flagged under load gets a slightly slower time, and the flag
// says why. Pure.
double OfficialCandidateTime(const std::vector<double>& cand_us, bool batches_flagged);

// host: a reference timed batch at `per_call` (judge's clock, any unit) is
// run again when over kRefDisturbed times the fastest of its length so far
// (`fastest` <= 0: none yet; judge_internal.h kRefRetries). Pure.
inline constexpr double kRefDisturbed = 2.0;
bool ReferenceBatchDisturbed(double per_call, double fastest);

// Host "interconnect" and memory ceiling: best of a few large memcpys, GB/s.
double MeasureMemcpyGbps();

struct RooflineCeilings {
  double hbm_gbps = 0, link_gbps = 0, flops_per_s = 1e10;
};
// cuda: the table's nominal per-GPU ceilings for gpu_name; host: the
// measured memcpy bandwidth for memory and interconnect. Overridden by the
// executor's measured ceilings in o.
RooflineCeilings ChooseCeilings(const LaunchOptions& o, const std::string& gpu_name,
                                pkf_dtype dtype, double host_memcpy_gbps);
// Fills *roof from one call's cost and the medians (0: not timed); returns
// the roofline in us.
double FillRoofline(const Cost& cost, const RooflineCeilings& c, double ref_median_us,
                    double cand_median_us, pkforge::v1::Roofline* roof);
// speedup_plausibility: flags (and marks suspicious) a result whose speedup
// exceeds 10x or whose candidate median is below the roofline.
void SpeedupPlausibility(double roofline_us, double cand_median_us, Outcome* out);

}  // namespace pkforge::kernels
