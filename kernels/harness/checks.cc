#include "kernels/harness/checks.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "common/stats.h"
#include "fmt/format.h"
#include "kernels/harness/containment.h"
#include "kernels/harness/protocol.h"
#include "kernels/harness/shm.h"

namespace pkforge::kernels {
namespace {

using Result = v1::EvaluationResult;

// cuda: longest a device-wide synchronize may take right after a call
// returned (judge's clock, including one command round trip).
constexpr int64_t kLingerLimitNs = 5'000'000;
// cuda: the median over an evaluation of the judge's empty kernel right
// after a call (IdleCheck's first attempts). H200, 2026-12-05: honest
// candidates 19-23 us at the median, 175 us at most; a persistent kernel in
// a second context of the candidate's (red team secondary_context_hog) made
// every one wait a time slice, 3.2 ms at the median, under kLingerLimitNs.
constexpr int64_t kIdleMedianLimitNs = 1'000'000;
constexpr size_t kIdleMinProbes = 3;
// cuda: an empty kernel around a reference timed batch that waits longer
// than this waited for another context's kernel (honest: 175 us at most on
// the H200, above), and how many such waits convict: one could be a hiccup
// of the driver, two are a pattern.
constexpr int64_t kRefIdleLimitNs = 500'000;
constexpr size_t kRefIdleBusyProbes = 2;
// How much slower per call the candidate may be in short batches, relative
// to the reference's own ratio, before it is flagged, and CHEAT_DETECTED on
// cuda (on the host backend a batch's fixed costs are wake-ups of hundreds
// of us on a loaded host, too noisy to convict on).
constexpr double kBatchFlag = 2.0;
constexpr double kBatchCheat = 2.0;

// The first thread of `pid` other than its leader that does not wait
// indefinitely in a system call while the process is stopped
// (ThreadWaitsIndefinitely: a timed sleep is work due later, as in
// testdata/detached_thread.cc), or 0 when every one does.
int UnblockedHelper(int pid) {
  for (int tid : ThreadIds(pid))
    if (tid != pid && ThreadState(pid, tid) != 0 && !ThreadWaitsIndefinitely(pid, tid)) return tid;
  return 0;
}

}  // namespace

bool AntiCheat::ThreadCheck(const std::string& when) {
  const bool first = first_thread_check_;
  first_thread_check_ = false;
  for (RankProc* p : pool_->cands()) {
    const int threads = CountThreads(p->pid);
    // A pool or an OpenMP team the first call started and left idle is a
    // helper like one pkf_setup started (red team round 20 r20_control_
    // lazy_pool, r20_control_openmp_lazy: CHEAT_DETECTED 9 of 9 each): it
    // becomes the baseline when every thread but the leader waits in a system
    // call without a timeout. Only after the first call: a thread that a later call
    // leaves behind is convicted as before (threads_at_call_time).
    if (first && threads > p->baseline_threads && UnblockedHelper(p->pid) == 0) {
      first_call_threads_ += threads - p->baseline_threads;
      p->baseline_threads = threads;
    }
    if (threads > p->baseline_threads) {
      const std::string d = fmt::format(
          "{}: candidate rank {} has {} threads after the call, {} after setup (work may "
          "outlive the call; create long-lived threads in pkf_setup or the first call, and "
          "leave them blocked between calls)",
          when, p->rank, threads, p->baseline_threads);
      out_->Cheat("outlived_call", d);
      return false;
    }
  }
  return true;
}

// Processes: the candidate ranks are the only candidate processes allowed to
// exist between calls (anything else could work outside the measured time).
bool AntiCheat::ProcessCheck(const std::string& when) {
  std::string detail;
  if (pool_->candidate_tree().Extra(&detail).empty()) return true;
  const std::string d = fmt::format("{}: {}", when, detail);
  out_->Cheat("outlived_call", d);
  return false;
}

// cuda: right after the candidate's call, the GPU must be idle. Freezing
// stops the candidate's CPU side, not kernels it queued; a kernel still
// running (a hog that would slow the reference, or work finishing after the
// judge's clock stopped) makes a trusted empty kernel wait for a time slice.
bool AntiCheat::IdleRound(v1::Phase phase, int64_t* worst) {
  std::vector<Reply> r;
  if (!pool_->Round(pool_->refs(), kOpIdle, 0, kIdleWithCopies, phase, &r)) return false;
  *worst = 0;
  for (const Reply& x : r) *worst = std::max<int64_t>(*worst, static_cast<int64_t>(x.value));
  return true;
}

bool AntiCheat::IdleCheck(v1::Phase phase, const std::string& when) {
  if (!Cuda()) return true;
  int64_t worst = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!IdleRound(phase, &worst)) return false;
    if (attempt == 0) idle_ns_.push_back(worst);
    if (worst <= kLingerLimitNs) {
      idle_reruns_ += attempt;  // one slow probe, excused: the detail says so
      return true;
    }
  }
  const std::string d = fmt::format(
      "{}: the GPU was still busy after the candidate's call returned (an empty kernel of the "
      "judge's waited {:.1f} ms, limit {} ms): candidate work outlived the call",
      when, worst / 1e6, kLingerLimitNs / 1'000'000);
  out_->Cheat("outlived_call", d);
  return false;
}

bool AntiCheat::ReferenceIdleProbe(v1::Phase phase, const std::string& when) {
  if (!Cuda()) return true;
  int64_t worst = 0;
  if (!IdleRound(phase, &worst)) return false;
  ref_idle_ns_.push_back(worst);
  if (worst <= kLingerLimitNs) return true;
  out_->Cheat("outlived_call",
              fmt::format("{}: the GPU was busy while the candidate was frozen (an empty kernel "
                          "of the judge's waited {:.1f} ms, limit {} ms): candidate work ran "
                          "beside the reference's timed batch",
                          when, worst / 1e6, kLingerLimitNs / 1'000'000));
  return false;
}

IdleLatency JudgeReferenceIdle(const std::vector<int64_t>& ns) {
  IdleLatency v;
  if (ns.empty()) return v;
  const size_t waited = static_cast<size_t>(
      std::count_if(ns.begin(), ns.end(), [](int64_t x) { return x > kRefIdleLimitNs; }));
  v.busy = waited >= kRefIdleBusyProbes;
  v.detail = fmt::format(
      "the judge's empty kernel around the reference's timed batches: {:.0f} us at most, {} of "
      "{} over {} us (limit: fewer than {})",
      *std::max_element(ns.begin(), ns.end()) / 1e3, waited, ns.size(), kRefIdleLimitNs / 1000,
      kRefIdleBusyProbes);
  return v;
}

IdleLatency JudgeIdleLatency(const std::vector<int64_t>& ns) {
  IdleLatency v;
  if (ns.empty()) return v;
  std::vector<double> us;
  for (int64_t x : ns) us.push_back(x / 1e3);
  const double median = pkforge::Quantile(us, 0.5);
  v.busy = ns.size() >= kIdleMinProbes && median * 1e3 > static_cast<double>(kIdleMedianLimitNs);
  v.detail = fmt::format(
      "the judge's empty kernel right after a call: {:.0f} us at the median, {:.0f} us at most, "
      "{} probes (limits: {} us at the median, {} ms each)",
      median, *std::max_element(us.begin(), us.end()), us.size(), kIdleMedianLimitNs / 1000,
      kLingerLimitNs / 1'000'000);
  return v;
}

void AntiCheat::IdleLatencyVerdict() {
  if (!Cuda() || idle_ns_.empty()) return;
  const IdleLatency v = JudgeIdleLatency(idle_ns_);
  const IdleLatency around = JudgeReferenceIdle(ref_idle_ns_);
  if (v.busy) {
    out_->Cheat("outlived_call",
                v.detail + ": the GPU stayed busy between the candidate's calls (a kernel of "
                           "another context of the candidate's, or work it left queued)");
  } else if (around.busy) {
    out_->Cheat("outlived_call",
                around.detail + ": the GPU was busy while the candidate was frozen and the "
                                "reference was timed (work the candidate queued to start "
                                "after its call, e.g. behind a long copy)");
  } else {
    out_->AppendToPassedDetail(
        "outlived_call",
        " (" + v.detail + (around.detail.empty() ? "" : "; " + around.detail) + ")");
  }
}

bool AntiCheat::OutlivedCheck(int slot, v1::Phase phase, const std::string& when) {
  if (!ThreadCheck(when) || !ProcessCheck(when) || !IdleCheck(phase, when)) return false;
  if (Cuda()) {
    // Work the candidate queued on other streams (perhaps not even submitted
    // to the GPU yet while its process is frozen): a device-wide synchronize
    // in its ranks, timed by the judge's clock, must find nothing left.
    // Timed from the command to the reply: the stop verified afterwards is
    // not part of the synchronize (it took ~0.2 ms, more on a busy host).
    // One slow synchronize may be the host's hiccup (an honest naive
    // candidate through a real executor on the H100, 2026-12-05: 5.7 ms,
    // beside the compiles of the evaluations queued after it): the same
    // call is made again on the same inputs and checked the same way; work
    // the candidate leaves behind on purpose is left behind again.
    std::vector<Reply> s;
    int64_t first_ns = 0;
    for (int attempt = 0;; ++attempt) {
      if (!pool_->Round(pool_->cands(), kOpSync, 0, 0, phase, &s)) return false;
      const int64_t sync_ns = pool_->last_reply_ns();
      if (sync_ns <= kLingerLimitNs) break;
      if (attempt == 0) {
        first_ns = sync_ns;
        if (!pool_->Round(pool_->refs(), kOpPoison, slot, 0, phase, &s)) return false;
        if (!pool_->Round(pool_->cands(), kOpRun, slot, 0, phase, &s)) return false;
        if (!ThreadCheck(when) || !ProcessCheck(when) || !IdleCheck(phase, when)) return false;
        ++linger_reruns_;
        continue;
      }
      const std::string d = fmt::format(
          "{}: a device-wide synchronize right after pkf_run returned took {:.1f} ms, and "
          "{:.1f} ms after the same call again (limit {} ms): work queued outside the call's "
          "stream outlived the call",
          when, first_ns / 1e6, sync_ns / 1e6, kLingerLimitNs / 1'000'000);
      out_->Cheat("outlived_call", d);
      return false;
    }
    // Kernels still running keep writing while its processes are frozen:
    // its outputs must not change over a delay and a second synchronize.
    std::vector<Reply> d1, d2;
    if (!pool_->Round(pool_->refs(), kOpDigest, slot, 0, phase, &d1)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(o_.outlive_delay_ms));
    if (!pool_->Round(pool_->cands(), kOpSync, 0, 0, phase, &s)) return false;
    if (!pool_->Round(pool_->refs(), kOpDigest, slot, 0, phase, &d2)) return false;
    for (size_t i = 0; i < pool_->refs().size(); ++i) {
      if (d1[i].value != d2[i].value) {
        const std::string d = fmt::format(
            "{}: outputs of rank {} changed {} ms after pkf_run returned (work outlived the call)",
            when, pool_->refs()[i]->rank, o_.outlive_delay_ms);
        out_->Cheat("outlived_call", d);
        return false;
      }
    }
  }
  out_->AddCheck(
      "outlived_call", true, false,
      fmt::format("no thread or process outlived a call{}{}{}{}",
                  Cuda() ? "; the GPU idle and outputs stable after each call" : "",
                  first_call_threads_ == 0
                      ? ""
                      : fmt::format(" ({} thread(s) the first call started, idle after it, "
                                    "kept as helpers)",
                                    first_call_threads_),
                  linger_reruns_ == 0
                      ? ""
                      : fmt::format(" ({} slow synchronize(s) after a call, each clean when "
                                    "the same call was made again)",
                                    linger_reruns_),
                  idle_reruns_ == 0
                      ? ""
                      : fmt::format(" ({} slow idle probe(s) after a call, each clean when "
                                    "repeated at once)",
                                    idle_reruns_)));
  return true;
}

void AntiCheat::StaticScan(const std::vector<std::string>& problem_forbidden) {
  std::vector<std::string> forbidden = problem_forbidden;
  forbidden.insert(forbidden.end(), o_.forbid.begin(), o_.forbid.end());
  if (forbidden.empty()) {
    out_->AddCheck("static_scan", true, true, "no forbidden calls for this problem");
    return;
  }
  std::ifstream f(o_.candidate, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> found;
  for (const auto& name : forbidden) {
    // Imported symbols appear NUL-terminated in .dynstr (possibly with @version).
    if (bytes.find(std::string(1, '\0') + name + std::string(1, '\0')) != std::string::npos ||
        bytes.find(std::string(1, '\0') + name + "@") != std::string::npos)
      found.push_back(name);
  }
  if (found.empty()) {
    out_->AddCheck("static_scan", true, true, "no forbidden symbol referenced by the candidate");
  } else {
    std::string list;
    for (auto& s : found) list += (list.empty() ? "" : ", ") + s;
    out_->AddCheck("static_scan", false, true, "candidate references forbidden calls: " + list);
    out_->result().add_flags("static_scan: forbidden calls referenced: " + list);
  }
}

void AntiCheat::IsolationCheck() {
  // Structural check, verified at run time: no candidate process maps or holds
  // a reference-side segment (where reference outputs live), and the seeds
  // only ever travel on reference ranks' command pipes.
  for (RankProc* p : pool_->cands()) {
    std::ifstream maps(fmt::format("/proc/{}/maps", p->pid));
    std::string line;
    while (std::getline(maps, line))
      if (line.find("pkf-ref-") != std::string::npos) {
        out_->AddCheck(
            "reference_isolation", false, false,
            fmt::format("candidate rank {} maps a reference segment: {}", p->rank, line));
        out_->End(Result::CHEAT_DETECTED, "reference_isolation: candidate maps reference memory");
        return;
      }
  }
  out_->AddCheck(
      "reference_isolation", true, false,
      "seeds and reference outputs live only in the judge and reference-rank processes; no "
      "candidate process maps reference memory");
}

void AntiCheat::LeftoverCheck() {
  std::string detail;
  if (!pool_->candidate_tree().Extra(&detail).empty()) {
    const std::string d = "after pkf_teardown: " + detail;
    out_->Cheat("leftover_process", d);
  } else {
    out_->AddCheck("leftover_process", true, false,
                   "no process of the candidate outlived its ranks");
  }
}

void AntiCheat::WallclockCrosscheck(const TimingSamples& s, const TimingSummary& t) {
  const TimingStats_& ref = t.ref;
  const TimingStats_& cand = t.cand;
  const double ref_rep = t.ref_rep, cand_rep = t.cand_rep;
  if (pool_->window_violations() > 0) {
    const std::string d =
        fmt::format("{} reported intervals outside the judge's wall-clock window; {}",
                    pool_->window_violations(), pool_->window_detail());
    out_->Cheat("wallclock_crosscheck", d);
  } else if (const double cand_min =
                 s.cand_unqueued_us.empty()
                     ? cand.min
                     : *std::min_element(s.cand_unqueued_us.begin(), s.cand_unqueued_us.end());
             ref.min > 0 && ref_rep >= 0.8 * ref.min && cand_rep < 0.5 * cand_min &&
             cand_min - cand_rep > 5.0) {
    // Where the reference's own account covers most of the judge's time, a
    // candidate whose account covers less than half of its own least
    // disturbed batch (noise only ever adds to the judge's time) claims time
    // it did not spend: it rewrote its timing state or its CUDA runtime.
    const std::string d = fmt::format(
        "candidate reports {:.1f} us per call but the judge measured at least {:.1f} us while "
        "its threads held a CPU or did not ask for one (the reference reports {:.1f} us of at "
        "least {:.1f} us)",
        cand_rep, cand_min, ref_rep, ref.min);
    out_->Cheat("wallclock_crosscheck", d);
  } else {
    out_->AddCheck(
        "wallclock_crosscheck", true, false,
        fmt::format("official times are the judge's clock over {}-call batches (round trip "
                    "{:.1f} us subtracted); ranks' own reports agree (candidate {:.1f} of "
                    "{:.1f} us, reference {:.1f} of {:.1f} us)",
                    s.batch, s.overhead_us, cand_rep, cand.median, ref_rep, ref.median));
  }
}

void AntiCheat::FrozenWhileIdle() {
  out_->AddCheck(
      "frozen_while_idle", true, false,
      fmt::format("candidate processes stopped outside their calls ({} frozen windows, no "
                  "thread ran)",
                  pool_->frozen_windows()));
}

namespace {
// The candidate's median time per call is no lower than the reference's:
// amortizing would have forged no gain (batch_consistency, batch_progress, batch_drip).
bool NoFasterThanReference(const TimingSamples& s, double by = 1.0) {
  return !s.cand_us.empty() && !s.ref_us.empty() &&
         by * pkforge::Quantile(s.cand_us, 0.5) >= pkforge::Quantile(s.ref_us, 0.5);
}
}  // namespace

// Per-call time in short batches against long ones, the candidate's ratio
// over the reference's. Calls are independent (candidate.h), so an honest
// candidate costs the same per call in both, up to the fixed cost of a batch
// spread over fewer calls (measured on the reference the same way; the
// candidate's is larger by the wake-up of a process stopped for longer: at
// 768/192-call batches of 6.6 us calls on the H200 that is ~4%, at 64/16
// ~35%). One that does a whole batch's work together (every input set of a
// batch is in its memory when the batch starts: one exchange for all calls,
// every call deferred to the last) costs per batch what one call costs, so
// per call about len(long)/len(short) = 4x more in short batches. Least
// disturbed batch of each kind: noise only adds. Known limit: the batch
// length is in the command the candidate's harness reads, and amortization
// in chunks shorter than a short batch looks the same in both.
void AntiCheat::BatchConsistency(const TimingSamples& s) {
  if (s.ref_short_walls.empty() || s.ref_us.empty()) return;
  auto least = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  const double ref_s = least(s.ref_short_walls), cand_s = least(s.cand_short_walls);
  const double ref_l = least(s.ref_us), cand_l = least(s.cand_us);
  if (ref_l <= 0 || cand_l <= 0 || ref_s <= 0) return;
  const double ratio = (cand_s / cand_l) / (ref_s / ref_l);
  const std::string d = fmt::format(
      "per call in {}-call batches against {}-call ones: candidate {:.2f} / {:.2f} us, reference "
      "{:.2f} / {:.2f} us: {:.2f}x the reference's ratio",
      s.short_len, s.batch, cand_s, cand_l, ref_s, ref_l, ratio);
  if (Cuda() && ratio > kBatchCheat && NoFasterThanReference(s)) {
    // As for batch_progress and batch_drip: no faster than the reference,
    // no forged gain (H100, 2026-12-06: the naive conv2d_halo, which
    // synchronizes twice a call, at 0.53x read 144.6 / 50.9 us a call in
    // short / long batches against the reference's 30.6 / 24.2: 2.25x).
    out_->AddCheck("batch_consistency", false, true,
                   d + fmt::format(" (beyond {:.1f}x, but the candidate is no faster than the "
                                   "reference: flagged)",
                                   kBatchCheat));
  } else if (Cuda() && ratio > kBatchCheat) {
    const std::string why =
        d + fmt::format(
                " (limit {:.1f}x): the work of a batch's calls was done together (one exchange for "
                "several calls, or calls deferred)",
                kBatchCheat);
    out_->Cheat("batch_consistency", why);
  } else if (ratio > kBatchFlag) {
    out_->AddCheck(
        "batch_consistency", false, true,
        d + fmt::format(" (flagged beyond {:.1f}x): work done together over a batch's calls?",
                        kBatchFlag));
  } else {
    out_->AddCheck("batch_consistency", true, false, d);
  }
}

namespace {
template <typename Samples>
bool AnyStarved(const Samples& v) {
  return std::any_of(v.begin(), v.end(), [](const auto& x) { return x.starved; });
}

// Nothing conclusive (batch_progress, batch_drip): flagged when load starved
// the samples (a candidate may have arranged that: red team round 8);
// batches too short to judge (the default sizes) are only said so.
// `why` names what made them inconclusive when it flags; empty: passed.
void NotJudged(Outcome* out, const char* check, const char* what, const std::string& detail,
               const std::string& why) {
  const bool flag = !why.empty();
  out->AddCheck(check, !flag, flag,
                fmt::format("{} (no {} was conclusive{}: not judged{})", detail, what,
                            flag ? ", " + why : "", flag ? "; flagged" : ""));
}
constexpr char kStarvedWhy[] = "load starved them";

}  // namespace

void AntiCheat::BatchProgress(const TimingSamples& s) {
  if (s.progress.empty()) {
    // Batches too short to tell a call in progress from one deferred
    // (kMinProbeCalls): none was probed (judge_timing.cc); said so.
    if (s.batch > 0 && s.batch < static_cast<uint32_t>(kMinProbeCalls))
      out_->AddCheck("batch_progress", true, false,
                     fmt::format("not probed: batches of {} calls (a probe needs at least {}; "
                                 "the drip batches and batch_consistency judge these)",
                                 s.batch, kMinProbeCalls));
    return;
  }
  // cuda: only "behind" convicts (JudgeProgress): work queued before the
  // stop runs on while the reference ranks count. H200, 2026-12-05, w=1 tiny
  // allreduce/allgather: 18 probes of 6 honest candidates (naive, one NCCL
  // call or one copy per call) all consistent; the whole-batch NCCL-group
  // fuser 3 of 4 behind, OK at 12.5x while this check only flagged.
  // A candidate over kIdleExcuseLimit x faster than the reference is judged
  // on what its probes found even where its main threads seemed idle
  // (progress_probe.h; red team round 15 r15_parked_leader_*).
  const std::vector<ProgressSample> probes = ProbesAsJudged(s.progress, s.ref_us, s.cand_us);
  const ProgressVerdict v = JudgeProgress(probes, /*ahead_convicts=*/!Cuda());
  const std::string d = fmt::format(
      "candidate stopped in the middle of {} secretly chosen batches of {} calls: {}{}",
      s.progress.size(), s.batch, v.detail,
      Cuda() && v.ahead_only > 0
          ? " (cuda: \"ahead\" only flags: queued GPU work runs on while the calls are counted)"
          : "");
  if (v.cheat && NoFasterThanReference(s)) {
    // No faster than the reference: amortizing would have forged no gain,
    // and such slow batches are where waking many threads weighs most
    // (helper-fp6: an honest 65-thread pool at world size 1, 0.08x, behind
    // on its probes while its main thread waited behind its workers).
    out_->AddCheck("batch_progress", false, true,
                   d + " (anomalous, but the candidate is no faster than the reference: flagged)");
  } else if (v.cheat) {
    out_->Cheat("batch_progress",
                d + ": calls were not done one after the other (deferred to a later call, or "
                    "done ahead by an earlier one)");
  } else if (v.conclusive == 0 && v.ahead_only == 0) {
    // A stop that took hold late is one the judge could not send in time:
    // the ranks held the CPUs it was woken on (red team round 13
    // r13_late_stop_whole: fused ranks that never yield, beside other load
    // on the judge's CPU, made every probe late and passed unjudged at
    // 11-24x). Flagged, so the time is the 75th percentile, when the
    // candidate is over 1.5x faster than the reference: at world size 1,
    // tiny, batches of ~150 us take most stops late on this VM (the judge's
    // wake-up), and identical code was flagged in 3 of 4 launches.
    const bool late = std::any_of(s.progress.begin(), s.progress.end(),
                                  [](const ProgressSample& p) { return p.late_stop; });
    NotJudged(out_, "batch_progress", "probe", d,
              AnyStarved(s.progress)               ? kStarvedWhy
              : late && !NoFasterThanReference(s, 1.5) ? "the stops took hold late"
                                                  : "");
  } else if (v.flag) {
    out_->AddCheck("batch_progress", false, true,
                   d + fmt::format(" ({} of {} conclusive probes anomalous{}: flagged)",
                                   v.anomalous, v.conclusive,
                                   v.ahead_only > 0 ? fmt::format(", {} ahead", v.ahead_only) : ""));
  } else {
    out_->AddCheck("batch_progress", true, false, d);
  }
}

void AntiCheat::BatchDrip(const TimingSamples& s) {
  if (s.drip.empty() || s.ref_us.empty() || s.cand_us.empty()) return;
  const auto [ref_free, cand_free, cand_low] = FreeTimes(s.ref_us, s.cand_us);
  const DripVerdict v = JudgeDrip(s.drip, ref_free, cand_free, cand_low);
  const std::string d = fmt::format(
      "{} secretly chosen batches of {} calls whose inputs were put in place one call at a time "
      "(each once the previous call's outputs were verified), against {:.2f} us per call "
      "free-running (reference {:.2f} us; {:.1f} ms of the evaluation): {}",
      s.drip.size(), s.drip.front().calls, cand_free, ref_free, s.drip_ms, v.detail);
  if (v.cheat && NoFasterThanReference(s)) {
    // As for batch_progress: no faster than the reference, no forged gain
    // (helper-fp6: control_helper_pool, 5x slower than the reference, its
    // pool thread asleep in every drip gap, slow on 2 of 3 drip batches).
    out_->AddCheck("batch_drip", false, true,
                   d + " (slow, but the candidate is no faster than the reference: flagged)");
  } else if (v.cheat) {
    out_->Cheat("batch_drip",
                d + (v.slow >= v.short_calls
                         ? ": a call alone costs over twice what it did when later calls' inputs "
                           "were visible (work done for several calls together)"
                         : ": dripped calls returned sooner than the harness's hand-off allows "
                           "(the hand-off in the candidate's process was skipped)"));
  } else if (v.conclusive == 0) {
    NotJudged(out_, "batch_drip", "drip batch", d, AnyStarved(s.drip) ? kStarvedWhy : "");
  } else if (v.flag) {
    out_->AddCheck("batch_drip", false, true,
                   d + fmt::format(" ({} of {} conclusive drip batches slow or short: flagged)",
                                   v.slow + v.short_calls, v.conclusive));
  } else {
    out_->AddCheck("batch_drip", true, false, d);
  }
}

}  // namespace pkforge::kernels
