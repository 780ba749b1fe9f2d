// Progress probes of timed batches (anti-cheat check "batch_progress").
//
// Contract. On a few batches drawn from secret randomness the judge stops
// the candidate's processes (the trusted freezer) at a secret moment in the
// middle of the batch, a fraction `elapsed` of the candidate's own fastest
// batch, and the reference ranks count the calls whose live outputs already
// match the reference (`done`, a fraction of the batch's calls). Calls are
// independent and each does its own work (candidate.h), so an honest
// candidate has done about `elapsed` of its calls. A candidate that defers
// calls to the end of the batch, or does the whole batch in its first call
// (into private memory, copying results out call by call), has done almost
// none ("behind"); one that wrote every call's outputs in its first call has
// done all of them long before its batch could have ended ("ahead"). Noise
// only delays an honest candidate; `elapsed` is the judge's clock, with
// nothing subtracted (a thread of the candidate that stays runnable would
// otherwise make every probe look early), and a verdict needs most of the
// conclusive probes to agree.
//
// Known limit (docs/threat-model.md): amortization over chunks of a few
// calls keeps `done` within a chunk of `elapsed` and is not seen.
//
// Pure functions; no state, any thread.
#pragma once

#include <string>
#include <vector>

namespace pkforge::kernels {

struct ProgressSample {
  double elapsed = 0;          // probe time / the candidate's fastest batch (0..)
  double done = 0;             // calls complete / calls in the batch (0..1)
  bool replies_pending = true; // some candidate rank had not replied at the probe
  bool starved = false;        // a rank's main thread waited for a CPU for over a
                               // quarter of the time before the stop (other load)
  bool late_stop = false;      // the stop took hold over a quarter of the batch after it was
                               // sent (batches of tens of us): where it fell is unknown
  bool main_idle = false;      // the ranks' main threads (where pkf_run runs) ran for under
                               // kMinMainRunShare of the window: still waking up, or
                               // waiting for CPUs (inconclusive)
  bool idle_unexcused = false; // main_idle, but judged anyway (WithoutIdleExcuse)
  bool own_threads_idle = false; // the candidate's threads other than the main ones ran for
                                 // under a tenth of the window: not its own load
  bool own_load = false;       // it waited as long, but the candidate's own threads held
                               // the CPUs (helper threads must be idle between calls):
                               // still conclusive, named in the detail
  int calls = 128;             // calls in the batch
  double start_allowance = 0;  // host: the share of the batch's time, from the command, that
                               // "behind" does not count (kProbeStartAllowanceNs)
};

// Host: a batch's first call can start tens of microseconds after its
// command whatever the batch's length (the continue signal, the wake-up,
// the command read, 9-19 us building the calls' descriptors, the batch's
// barrier; on this 2-core host 10-30 us idle, 60-80 us beside another
// test's ranks), which in a batch of ~130 us (128
// calls of ~1 us at world size 1, tiny) is half of it: the probes read
// honest candidates 0% done at 48-63% (CI, 2026-12-06: naive_host_moe_all2all
// CHEAT_DETECTED on three such probes). So "behind" compares the calls
// done with the time after this allowance (or the reference's median start,
// if longer: RankPool::RefStartMedianNs, trusted), and on a secret half of
// the probes the judge pauses the candidate that much later than the secret
// share of its batch, so that short batches are still probed in their
// middle; "ahead" keeps the judge's whole clock and the early pauses of the
// other half. Host, world size 1 only: with several ranks the reference's
// start (their barrier) is 60-170 us, and a fuser's batch of ~110 us at 41x
// (red team drip_aware_fuse, allreduce world 3) was never judged in a first
// version; honest batches there are milliseconds. Not on cuda (ahead_convicts false),
// where batches start behind the same wake-up but last far longer and the
// stall rule was calibrated without it.
inline constexpr double kProbeStartAllowanceNs = 50'000;

enum class ProgressFinding { kConsistent, kBehind, kAhead, kInconclusive };

// A probe finds nothing done only if the ranks' main threads had the time
// to do something: together they must have run for this share of the
// window times the CPUs they could use. helper-fp6 (2026-12-05): an honest
// 65-thread pool at world size 1, tiny (batches of 60-300 us), was stopped
// before its first call returned, its main thread still waking up behind its
// workers, on 3 of 3 probes in 5 of 10 runs: CHEAT_DETECTED. A fuser
// computes all the while (red team round 6 drip_aware_fuse); one that keeps
// its own main threads off the CPU to look idle slows its batches as much.
inline constexpr double kMinMainRunShare = 0.4;
// Fewer calls per batch and a probe cannot tell a call in progress from one
// deferred (helper-fp6: at the default sizes B = 2-3, the first call ends
// after a third of the batch, so stops at 30-40% read 0% done, "behind",
// for honest naive candidates; one convicted). Such batches are the drip
// batches' and batch_consistency's.
inline constexpr int kMinProbeCalls = 8;

// `main_idle` excuses a probe only for a candidate no more than this much
// faster than the reference (median per call): the excuse is for an honest
// thread pool whose main thread wakes behind its workers (0.08x, above).
// The judge takes the thread-group leader for the main thread, and a
// candidate can park its leader and run the harness's loop on another
// thread (swapcontext onto the leader's saved context): every probe then
// read main_idle and the check passed unjudged while the candidate fused
// whole batches (red team round 15 r15_parked_leader_*: OK 6.2-16x in 37 of
// 37 launches against an honest 4.6-7.1x). A fast candidate gains by being
// fast, and its probes are judged on what they found. 1.25: at 1.5 a fuser
// held just under the gate passed unjudged at 1.04-1.44x against an honest
// 0.94-1.01x for the same algorithm (round 16 r16_parked_leader_capped*; the
// "ahead" ones are now judged whatever the excuse); at 1.0 identical code,
// faster than the reference by noise half the time, lost the excuse and
// was convicted at world 1 beside a busy loop (HostEval.HonestCandidates
// AreNotConvictedBesideABusyLoopOnTheirCpu, 14:05 UTC).
inline constexpr double kIdleExcuseLimit = 1.25;
// The probes with the main_idle excuse taken away (idle_unexcused marks
// them in the detail).
std::vector<ProgressSample> WithoutIdleExcuse(std::vector<ProgressSample> samples);
// The probes as batch_progress judges them (the verdict and the schedule's
// settling alike): without the idle excuse when the candidate's median time
// per call is over kIdleExcuseLimit times below the reference's (`ref_us`,
// `cand_us`: per-call samples in one unit; either empty: as they are).
std::vector<ProgressSample> ProbesAsJudged(const std::vector<ProgressSample>& probes,
                                           const std::vector<double>& ref_us,
                                           const std::vector<double>& cand_us);

// Who held a probed candidate's main thread off its CPU. `share`: the most
// a rank's main thread waited for a CPU in the window, / the window;
// `least`: the least such share its timed batches showed (ranks sharing
// CPUs wait for each other); `used`: the share of their CPUs the
// candidate's threads used; `other_cpu_ns`: CPU time of its threads other
// than the ranks' main ones. Starved (inconclusive) when the wait is over
// kStarvedShare above `least` and the candidate's threads did not fill
// their CPUs, or, `single_host_rank` (the host backend at world size 1:
// the candidate has no process but its one rank), its other threads ran
// for under a tenth of the window, exited ones included (nothing of its own
// could have held the main thread up: a one-thread candidate that waited,
// waited behind other processes however much it ran itself; CI,
// 2026-12-06: naive_host_moe_all2all at world size 1 read "own_load" on
// probes with another test's ranks on the CPUs, its first call late,
// CHEAT_DETECTED). A tenth, not "under half the wait": red team round 24
// r24_exit_thread_starve, a thread spinning ~half the window on the rank's
// CPU before the stop, stayed under half of waits longer than the window.
// Not with several ranks, whose main threads hold each other up: there a
// fuser's spinning ranks made its leader's probes "starved" (red team
// drip_aware_fuse, OK at 41x in a first version). Else own load
// (conclusive) when it waited as long.
// Starved probes and drip batches: a main-thread wait (share of the window)
// more than this above its yardstick (judge_internal.h ReferenceWaitedAsMuch).
inline constexpr double kStarvedShare = 0.25;
struct ProbeLoad {
  bool starved = false, own_load = false, own_threads_idle = false;
};
ProbeLoad AttributeProbeWait(double share, double least, double used, double other_cpu_ns,
                             double window_ns, bool single_host_rank);
// A starved probe whose reference batch (same pair) did not wait as much is
// normally the candidate's own doing (red team round 8 drip_starve_child:
// load from processes of its own that the window does not count) and counts
// as own load. Except where AttributeProbeWait found its own threads idle
// (one host rank, no other process): the load was other processes', which
// came and went between the two batches.
bool StarvedAlthoughReferenceWasNot(const ProgressSample& probe);

// One probe: behind when at least 30% of a batch's time has passed and fewer
// than a quarter of the calls that would be done are; ahead when every call
// is done at no more than half the batch's time with replies still pending;
// inconclusive when too little time passed, the batch had ended, the
// candidate's batches are too short, or it was starved of CPU by other load.
ProgressFinding ClassifyProgress(const ProgressSample& s);
// The share of the batch's time "behind" counts: elapsed less the start
// allowance, at least 0.
double BehindElapsed(const ProgressSample& s);

struct ProgressVerdict {
  bool cheat = false;  // at least two probes behind or ahead, and 3/4 of the conclusive ones
                       // (or at least four, and 2/3 of them)
                       // (never on one: a single stall of an honest candidate must not convict)
  bool flag = false;   // some anomalous probe, not enough for cheat
  int anomalous = 0;   // probes behind or ahead
  int conclusive = 0;  // probes not inconclusive
  int ahead_only = 0;  // ahead probes that may not convict (ahead_convicts false)
  int stalled = 0;     // cuda: behind probes under kStallDone done after kStallElapsed
  std::string detail;  // every probe, for the check's detail
};

// `ahead_convicts` false (the cuda backend): GPU work the candidate queued
// before the stop runs on while the reference ranks count, so a probe can
// only over-count done calls. "Behind" stays evidence; "ahead" is also what
// an honest candidate whose host ran ahead of its GPU shows (H200,
// 2026-12-05: a candidate time-sliced against a second context of its own
// read 100% done at 35-48% on 4 of 9 probes). Ahead probes are then left out
// of the count (neither anomalous nor conclusive) and only flag.
ProgressVerdict JudgeProgress(const std::vector<ProgressSample>& samples,
                              bool ahead_convicts = true);

// P(X >= k) for X ~ Binomial(n, q). The third conviction rule: at least
// four anomalous probes whose count an honest candidate, each probe
// anomalous with chance kHonestAnomaly, would reach with chance under
// kHonestTail (4 of 4, 5 of 7, 6 of 10, 7 of 15, 8 of 20 and up).
double BinomialTail(int n, int k, double q);
inline constexpr double kHonestAnomaly = 0.05;
inline constexpr double kHonestTail = 1e-5;
// The fourth rule, cuda only (ahead_convicts false): "stalled" probes,
// behind with under kStallDone of the batch's calls done after at least
// kStallElapsed of its time, are what whole-batch fusion shows until its
// fused work lands (then every call is done at once, which reads consistent
// past half the batch, and "ahead" only flags on cuda). GPU work queued
// before the stop only adds done calls, so an honest candidate stalls only
// if its host did not get to launch a twentieth of its calls in a third of
// the batch. H100 (session 17, bundle 483d0f1): batch_fuse_group read 0%
// done at 34-52% on 5 of 10 probes and 100% at 59-73% on the other 5: 5 of
// 10 anomalous only flagged (the binomial rule needs 6), and it was OK at
// 14.9x and 15.3x in 2 of 3 runs. Stalled: at least 4 (stalls of one lasting
// cause, not independent draws, are the risk the count guards against), with
// an honest tail under kHonestTail at kHonestStall (4 of 10, 5 of 20).
// A fraction, not "no call": one honest call before the fused ones would
// otherwise make every probe not stalled (red team round 23
// r23_real_first_blast). Not on the host, where the ahead probes convict and
// drip batches see fusion: there, honest candidates of several idle threads
// per rank at world size 8 on 2 CPUs stalled on 24% of their probes (round
// 23: r20_control_threshold_pool convicted 4 of 24 by this rule alone).
inline constexpr double kStallElapsed = 1.0 / 3;
inline constexpr double kStallDone = 0.05;
inline constexpr double kHonestStall = 0.01;

// Whether the probes so far decide: at least `wanted` conclusive, and none
// anomalous, or enough for a conviction that has held for kConfirmProbes
// more probes since it first did; or 2 x `wanted` probes of which none was
// conclusive (more would not be: the stops of such batches come late). An undecided mix (one or two anomalous
// among consistent ones) gets more probes (timing_schedule.h): a fuser's
// next ones are anomalous too (red team round 6 drip_aware_fuse: 2 of 3
// behind, a flag, at 12-16x), an honest candidate's are not, so a
// conviction a burst of load made is undone by the probes after it.
inline constexpr size_t kConfirmProbes = 2;
bool ProgressSettled(const std::vector<ProgressSample>& samples, int wanted,
                     bool ahead_convicts = true);

const char* ProgressFindingName(ProgressFinding f);

}  // namespace pkforge::kernels
