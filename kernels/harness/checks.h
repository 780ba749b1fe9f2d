// The judge's anti-cheat checks (docs/threat-model.md has the threats they
// answer). Each records its outcome under a fixed check name in the
// evaluation's Outcome (outcome.h); a failing check that is not flag-only
// ends the evaluation with CHEAT_DETECTED and "<check>: <detail>".
//
//   static_scan           the candidate binary imports no forbidden call
//                         (flag only).
//   reference_isolation   no candidate process maps a reference segment.
//   outlived_call         between calls: no thread beyond those after
//                         pkf_setup (ThreadCheck), no candidate process but
//                         the ranks (ProcessCheck), the GPU idle (IdleCheck,
//                         cuda), and on cuda a device-wide synchronize that
//                         finds nothing left and outputs that stay unchanged
//                         over a delay (OutlivedCheck runs them all).
//   leftover_process      nothing of the candidate outlived its ranks.
//   wallclock_crosscheck  every rank's reported interval lies inside the
//                         judge's window, and the candidate's own account
//                         of its time is not far below the judge's clock.
//   frozen_while_idle     candidate processes did not run while frozen (the
//                         failure is recorded by RankPool::Thaw).
//   batch_consistency     per-call time in short batches against long ones,
//                         relative to the reference's (work done together
//                         over a batch's calls).
// The output checks of every call (input_mutation, poison_unwritten,
// timed_output_reverify, poison_at_start, determinism) are part of the
// evaluation sequence in judge.cc.
//
// Every bool-returning check returns false when the evaluation has ended.
// Thread safety: none; used by the judge's single thread, with the RankPool
// and Outcome of the same evaluation.
#pragma once

#include <string>
#include <vector>

#include "kernels/harness/judge.h"
#include "kernels/harness/outcome.h"
#include "kernels/harness/rank_pool.h"
#include "kernels/harness/verdict.h"
#include "pkforge/v1/common.pb.h"

namespace pkforge::kernels {

// cuda: over all idle probes of an evaluation (the judge's empty kernel
// right after a call, on the reference's context), busy when their median
// exceeds 1 ms: a kernel of another context (time-sliced with the judge's)
// stays under the 5 ms limit of each single probe but makes every probe wait
// a time slice. Pure; any thread.
struct IdleLatency {
  bool busy = false;
  std::string detail;
};
IdleLatency JudgeIdleLatency(const std::vector<int64_t>& ns);
// cuda: the judge's empty kernel right before and right after each
// reference timed batch (AntiCheat::ReferenceIdleProbe), busy when at least
// two of them waited over 0.5 ms. The candidate is frozen then and its last
// call's idle probe found the GPU idle, so only work it queued to start
// later (behind a long copy, red team round 8 delayed_hog_copy_engine) can
// hold the GPU while the reference is timed. Pure; any thread.
IdleLatency JudgeReferenceIdle(const std::vector<int64_t>& ns);

class AntiCheat {
 public:
  // options, *pool and *outcome must outlive it.
  AntiCheat(const LaunchOptions& options, RankPool* pool, Outcome* outcome)
      : o_(options), pool_(pool), out_(outcome) {}

  // Before any rank exists: the problem's forbidden calls and --forbid
  // against the candidate binary's imported symbols.
  void StaticScan(const std::vector<std::string>& problem_forbidden);
  void IsolationCheck();

  // After a candidate call, while its processes are frozen. Threads beyond
  // those after pkf_setup convict, except after the very first call, where
  // new threads all waiting without a timeout (a pool or an OpenMP team
  // started on first use, idle) become the baseline instead.
  bool ThreadCheck(const std::string& when);
  bool ProcessCheck(const std::string& when);
  bool IdleCheck(v1::Phase phase, const std::string& when);
  // The three above, in that order, after a candidate's round (a timed or
  // drip batch): no thread, process or GPU work of the candidate's left.
  bool NothingLeftRunning(v1::Phase phase, const std::string& when) {
    return ThreadCheck(when) && ProcessCheck(when) && IdleCheck(phase, when);
  }
  // cuda: the same empty kernel right before (after a secret delay) and
  // right after a reference timed batch; one that waits beyond the single
  // probe limit is CHEAT_DETECTED outlived_call at once, the rest are judged
  // by IdleLatencyVerdict (JudgeReferenceIdle).
  bool ReferenceIdleProbe(v1::Phase phase, const std::string& when);
  // All of the above, and on cuda that no work of the call is left (slot:
  // the call's set: its inputs, its outputs). A synchronize slower than the
  // limit makes the same call on the same inputs once more (outputs poisoned
  // first) and convicts only if that one is slow too.
  bool OutlivedCheck(int slot, v1::Phase phase, const std::string& when);

  // After the candidate ranks have exited (RankPool::AwaitCandidateExit).
  void LeftoverCheck();

  // Over the timing phase's samples (verdict.h), in this order.
  void WallclockCrosscheck(const TimingSamples& s, const TimingSummary& t);
  void FrozenWhileIdle();
  void BatchConsistency(const TimingSamples& s);
  // batch_progress: the progress probes (progress_probe.h); CHEAT_DETECTED
  // on two anomalous probes that are 3/4 of the conclusive ones, flagged
  // otherwise when any is anomalous. cuda: only "behind" probes convict,
  // "ahead" ones flag (JudgeProgress's ahead_convicts).
  // cuda: the idle probes' latencies over the evaluation (JudgeIdleLatency,
  // and JudgeReferenceIdle for those around the reference's batches):
  // CHEAT_DETECTED outlived_call when busy, else appended to the passed
  // outlived_call check's detail.
  void IdleLatencyVerdict();
  void BatchProgress(const TimingSamples& s);
  // batch_drip: the drip batches (drip_check.h) against the medians of the
  // official per-call times; CHEAT_DETECTED on two slow drip batches that are
  // 3/4 of the conclusive ones, flagged on one.
  void BatchDrip(const TimingSamples& s);

 private:
  bool Cuda() const { return o_.backend == "cuda"; }
  // cuda: one round of the judge's empty kernel on the reference ranks; the
  // longest wait into *worst. False when the evaluation has ended.
  bool IdleRound(v1::Phase phase, int64_t* worst);

  const LaunchOptions& o_;
  // cuda: how long the judge's empty kernel waited on each idle probe's
  // first attempt (IdleLatencyVerdict).
  std::vector<int64_t> idle_ns_;
  // cuda: ReferenceIdleProbe's waits (JudgeReferenceIdle).
  std::vector<int64_t> ref_idle_ns_;
  // cuda: slow synchronizes after a call excused by a clean repeat of the
  // same call (OutlivedCheck).
  int linger_reruns_ = 0;
  bool first_thread_check_ = true;
  int first_call_threads_ = 0;  // threads the first call started, accepted as idle helpers
  // Idle probes slower than the limit whose immediate repeat was not.
  int idle_reruns_ = 0;
  RankPool* pool_;
  Outcome* out_;
};

}  // namespace pkforge::kernels
