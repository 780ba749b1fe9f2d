#include "kernels/harness/judge.h"

#include <signal.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <string_view>

#include "common/sha256.h"
#include "common/status.h"
#include "fmt/format.h"
#include "google/protobuf/util/json_util.h"
#include "kernels/harness/checks.h"
#include "kernels/harness/containment.h"
#include "kernels/harness/cuda_probe.h"
#include "kernels/harness/outcome.h"
#include "kernels/harness/protocol.h"
#include "kernels/harness/rank_pool.h"
#include "kernels/harness/shm.h"
#include "kernels/harness/verdict.h"

// The evaluation sequence (Judge::Evaluate): request checks, input-set
// plan, hardening and the rank processes (rank_pool.h), setup, correctness
// trials, timed batches, teardown, the verdict (verdict.h). The anti-cheat
// checks it runs between the steps are in checks.h.

namespace pkforge::kernels {
namespace {

namespace v1 = ::pkforge::v1;
using Result = v1::EvaluationResult;

// Input sets rotated through: enough to cover 3x the last-level cache, as
// ParallelKernelBench does (its cap is 128 too), so no call finds another
// call's data cached. With PKB's default 1024 x 1024 shapes (2-4 MiB per set)
// an H200's 60 MiB L2 needs ~45 sets. (Each call's own set is regenerated
// just before it, so a set that fits in L2 is warm for both sides alike; see
// docs/performance.md on the L2 flush that was tried.)
constexpr int kMaxInputSets = 128;
// Short batches per timing phase, for AntiCheat::BatchConsistency.
constexpr int kShortBatches = 2;
// Progress-probed batches per timing phase (AntiCheat::BatchProgress), at
// secret places after the first kProbeAfter timed batches, each paused at a
// secret 30-70% of the candidate's fastest batch so far.
constexpr int kProgressProbes = 3;
constexpr int kProbeAfter = 3;
constexpr int kExtraProbes = 6;
// Drip batches per timing phase (AntiCheat::BatchDrip; host), at secret
// places after the first kProbeAfter timed batches.
constexpr int kDripBatches = 3;
// More drip batches, after the timed ones, while their findings are mixed
// or too few are conclusive (as for the probes).
constexpr int kExtraDrips = 3;

// CPU time of the candidate ranks, ns: per rank, its live threads' (ns
// resolution) or the whole process's with its exited threads (tick
// resolution), whichever is more: a thread started and joined inside a batch
// is in no thread list (red team round 6 drip_starve_spinner hid a spinner
// that way to have its drip batches counted as starved by others).
int64_t RanksCpuNs(const std::vector<RankProc*>& ranks) {
  int64_t sum = 0;
  for (const RankProc* p : ranks) {
    int64_t threads = 0;
    for (int tid : ThreadIds(p->pid)) threads += std::max<int64_t>(0, ThreadCpuNs(p->pid, tid));
    sum += std::max(threads, ProcessCpuNs(p->pid));
  }
  return sum;
}
// CPUs the candidate ranks may run on (the union of their affinity masks).
int RanksCpus(const std::vector<RankProc*>& ranks) {
  cpu_set_t all;
  CPU_ZERO(&all);
  for (const RankProc* p : ranks) {
    cpu_set_t m;
    CPU_ZERO(&m);
    if (sched_getaffinity(p->pid, sizeof m, &m) == 0) CPU_OR(&all, &all, &m);
  }
  return std::max(1, CPU_COUNT(&all));
}

// Whether the progress probes so far decide: enough of them conclusive, and
// none anomalous or already enough for a conviction. An undecided mix (one
// or two anomalous among consistent ones) gets more probes: a fuser's next
// ones are anomalous too (red team round 6 drip_aware_fuse: 2 of 3 behind,
// a flag, at 12-16x), an honest candidate's are not.
bool ProbesSettled(const std::vector<ProgressSample>& v, int wanted, bool cuda) {
  const ProgressVerdict pv = JudgeProgress(v, /*ahead_convicts=*/!cuda);
  return pv.conclusive >= wanted && (pv.anomalous == 0 || pv.cheat);
}

// Wall time one timed batch aims at: long against the judge's own round
// trip (tens of us), short against the evaluation budget.
// PKFORGE_BATCH_TARGET_US overrides it for measurements.
// cuda aims at 5 ms: the fixed per-batch costs that differ between the sides
// (see the set count in Run()) then weigh ~2%; host batches stay at 2 ms
// (CPU timings are for development; shorter evaluations).
int64_t BatchTargetNs(bool /*cuda*/) {
  static const int64_t env_ns = [] {
    const char* v = std::getenv("PKFORGE_BATCH_TARGET_US");
    if (v == nullptr || *v == '\0') return int64_t{0};
    const long long us = std::strtoll(v, nullptr, 10);
    return us >= 1 && us <= 1'000'000 ? static_cast<int64_t>(us) * 1000 : int64_t{0};
  }();
  if (env_ns > 0) return env_ns;
  return 2'000'000;  // cuda 5 ms measured: fidelity 0.95-0.99 but 9-14 s per evaluation
}

// cuda: device memory the timing input sets of one side of one rank may take
// (default 512 MiB; PKFORGE_SET_BUDGET_MB=0 keeps only the cache rule).
// Measured on the H200 (docs/performance.md): 3 GiB with 5 ms batches gave
// identical-candidate medians of 0.95-0.99 but 9-14 s per evaluation, since
// every call of every batch is generated, snapshotted and compared; 512 MiB
// with 2 ms batches: 3.7 s (allreduce, default size). For measurement-grade
// runs: PKFORGE_SET_BUDGET_MB=3072 PKFORGE_BATCH_TARGET_US=5000.
int64_t SetBudgetBytes() {
  static const int64_t bytes = [] {
    const char* v = std::getenv("PKFORGE_SET_BUDGET_MB");
    if (v == nullptr || *v == '\0') return int64_t{512} << 20;
    const long long mb = std::strtoll(v, nullptr, 10);
    return mb >= 0 && mb <= (1 << 20) ? static_cast<int64_t>(mb) << 20 : int64_t{512} << 20;
  }();
  return bytes;
}

// Run-queue wait (schedstat) of each process so far, ns; -1 where unknown.
template <typename Procs>
// `delay`: ProcessRunDelayNs (every thread) or MainThreadRunDelayNs.
std::vector<int64_t> RunDelays(const Procs& procs, int64_t (*delay)(int) = ProcessRunDelayNs) {
  std::vector<int64_t> v;
  for (const auto* p : procs) v.push_back(delay(p->pid));
  return v;
}
// Largest growth of one process's run-queue wait between two readings.
int64_t MaxGrowth(const std::vector<int64_t>& before, const std::vector<int64_t>& after) {
  int64_t m = 0;
  for (size_t i = 0; i < before.size() && i < after.size(); ++i)
    if (before[i] >= 0 && after[i] >= before[i]) m = std::max(m, after[i] - before[i]);
  return m;
}

// The candidate ranks' CPU use over a window that starts at construction
// (a progress probe, a drip batch). Starved: a rank's main thread (where
// pkf_run runs) waited for a CPU for a quarter of the window more than in
// the candidate's least disturbed timed batch (ranks sharing a CPU wait
// there too), while its threads together used under half of the CPUs they
// may run on: the CPU went to other processes. A candidate whose own threads
// keep its calls waiting still uses its CPUs: not starved (own_load).
struct CandidateWindow {
  explicit CandidateWindow(const std::vector<RankProc*>& ranks)
      : ranks_(ranks),
        wait0_(RunDelays(ranks, MainThreadRunDelayNs)),
        cpu0_(RanksCpuNs(ranks)),
        main0_(MainThreadsCpuNs(ranks)),
        cpus_(RanksCpus(ranks)) {}
  static int64_t MainThreadsCpuNs(const std::vector<RankProc*>& ranks) {
    int64_t sum = 0;
    for (const RankProc* p : ranks) sum += std::max<int64_t>(0, ThreadCpuNs(p->pid, p->pid));
    return sum;
  }
  // Largest main-thread wait since the start, as a share of window_ns.
  double WaitShare(int64_t window_ns) const {
    return MaxGrowth(wait0_, RunDelays(ranks_, MainThreadRunDelayNs)) /
           std::max(1.0, static_cast<double>(window_ns));
  }
  // Share of their CPUs the candidate's threads used since the start.
  double Used(int64_t window_ns) const {
    return (RanksCpuNs(ranks_) - cpu0_) / std::max(1.0, static_cast<double>(window_ns) * cpus_);
  }
  int64_t MainCpuNs() const { return MainThreadsCpuNs(ranks_) - main0_; }
  int cpus() const { return cpus_; }

 private:
  const std::vector<RankProc*>& ranks_;
  std::vector<int64_t> wait0_;
  int64_t cpu0_, main0_;
  int cpus_;
};

uint64_t SecretSeed() {
  uint64_t s = 0;
  while (getrandom(&s, sizeof s, 0) != static_cast<ssize_t>(sizeof s)) {
  }
  return s;
}

int64_t LastLevelCacheBytes() {
  int64_t best = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream f(fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/size", i));
    std::string s;
    if (!(f >> s) || s.empty()) continue;
    int64_t mult = 1;
    if (s.back() == 'K') mult = 1024;
    if (s.back() == 'M') mult = 1024 * 1024;
    best = std::max<int64_t>(best, std::atoll(s.c_str()) * mult);
  }
  return best > 0 ? best : 32 << 20;
}

// PKFORGE_TIMING_DIAG=1 also prints when each phase of an evaluation ends
// (ms since the evaluation started), to see where an evaluation's time goes.
void PhaseDiag(const char* what, int64_t t_start) {
  static const bool on = std::getenv("PKFORGE_TIMING_DIAG") != nullptr;
  if (on) fprintf(stderr, "phase %-12s %8.1f ms\n", what, (MonotonicNs() - t_start) / 1e6);
}

// The wall times of one timed batch on both sides, us (Judge::TimedPair).
struct BatchWalls {
  double ref_wall = 0, cand_wall = 0;  // the judge's clock
  double ref_rep = 0, cand_rep = 0;    // the ranks' own longest span
  double cand_wait = 0;                // CPU waits of candidate threads and the judge
  double cand_span = 0;                // candidate: command to its last reply
  double cand_main_wait_share = 0;     // candidate: most a rank's main thread waited, / wall
};

class Judge {
 public:
  explicit Judge(const LaunchOptions& o) : o_(o), pool_(o_, &out_), checks_(o_, &pool_, &out_) {}

  absl::StatusOr<Result> Evaluate();

 private:
  // Evaluate()'s steps, in order. Each bool step returns false when the
  // evaluation has ended; out_ then holds the status and its details.
  absl::Status ResolveRequest();
  void DescribeRequest();
  void PlanInputSets();
  bool Launch(int64_t t_start);
  bool SetUp();
  bool Correctness();
  bool Timing();
  void Teardown();
  void Finish();
  void Publish(int64_t t_start);

  bool Generate(int slot, v1::Phase phase);
  // label: how messages name a timed batch ("drip batch": DripPair's).
  bool CheckBatch(const Cmd& batch, int index, v1::Phase phase, bool timed,
                  const char* label = "timed batch");
  bool CheckOutputs(int slot, int trial, v1::Phase phase, bool timed);
  // Timing()'s steps.
  bool ProbeRoundTrip(v1::Phase phase, double* min_us);
  void ChooseBatchLength(double overhead_us);
  bool BatchInputs(const Cmd& batch, v1::Phase phase, uint32_t flags = 0);
  // overhead_us: the smallest empty round trip so far (subtracted from the
  // reference's free batch, as from timed ones).
  bool DripPair(const Cmd& batch, int index, v1::Phase phase, double overhead_us);
  bool PoisonAtStart(const Cmd& batch, int index, v1::Phase phase);
  // pause_ns > 0: the candidate's batch is a progress probe (ProgressProbe),
  // not a timed sample.
  bool TimedPair(const Cmd& batch, int index, bool ref_first, v1::Phase phase, BatchWalls* w,
                 int64_t pause_ns = 0, double span_ns = 0);
  bool ProgressProbe(const Cmd& batch, v1::Phase phase, bool ref_ran, int64_t pause_ns,
                     double span_ns,
                     std::vector<Reply>* replies);
  void RecordDeviceState(const std::string& versions);
  bool Cuda() const { return o_.backend == "cuda"; }

  // Declared first: pool_ and checks_ refer to them.
  LaunchOptions o_;
  Outcome out_;
  RankPool pool_;
  AntiCheat checks_;

  const Problem* problem_ = nullptr;
  pkf_dtype dtype_ = PKF_BF16;
  Dims dims_;
  DataLayout layout_;
  int sets_ = 2;  // timing input sets K
  uint64_t scratch_bytes_ = 0;
  // Open from ResolveRequest() until the judge ends (the rank processes
  // inherit the descriptor, as they always did).
  std::ifstream candidate_file_;
  std::string candidate_sha256_;
  std::vector<uint64_t> revealed_seeds_;
  std::vector<v1::OutputCheck> summaries_;  // last passing trial, per (rank, output)
  TimingSamples samples_;
  std::string rank_exe_;  // what rank processes exec (the worker itself, or pkforge-cuda-rank)
  CudaDeviceInfo cuda_;
  std::string versions_;  // cuda: "cudart=X nccl=Y" from reference rank 0's setup reply
  std::vector<double> trial_ref_wall_us_;  // reference call wall times in the trials
  int poison_checks_ = 0;
  // The least share of a candidate batch a rank's main thread waited for a
  // CPU (progress probes: the wait that is normal here, e.g. ranks sharing a CPU).
  double least_wait_share_ = 1.0;
  double host_memcpy_gbps_ = 0;  // measured before the ranks start (host ceiling)
};

void Judge::RecordDeviceState(const std::string& versions) {
  auto* ds = out_.result().mutable_device_state();
  if (!Cuda()) return;
  const NvmlSample n = SampleNvml(o_.world_size);
  ds->clear_gpus();
  for (const GpuSample& g : n.gpus) {
    v1::GpuState* s = ds->add_gpus();
    s->set_index(g.index);
    s->set_sm_clock_mhz(g.sm_clock_mhz);
    s->set_mem_clock_mhz(g.mem_clock_mhz);
    s->set_temperature_c(g.temperature_c);
    s->set_power_w(g.power_w);
    s->set_throttle_reasons(g.throttle_reasons);
  }
  ds->set_driver_version(!n.driver_version.empty()
                             ? n.driver_version
                             : fmt::format("cuda driver api {}", cuda_.driver_version));
  // "cudart=X nccl=Y" from reference rank 0's setup reply.
  for (const char* k : {"cudart=", "nccl="}) {
    const std::string key = k;
    const size_t at = versions.find(key);
    if (at == std::string::npos) continue;
    const std::string v =
        versions.substr(at + key.size(), versions.find(' ', at) - at - key.size());
    if (key == "cudart=")
      ds->set_cuda_toolkit_version(v);
    else
      ds->set_nccl_version(v);
  }
}

bool Judge::Generate(int slot, v1::Phase phase) {
  std::vector<Reply> r;
  const uint64_t seed = SecretSeed();
  if (!o_.reveal_seeds_file.empty()) revealed_seeds_.push_back(seed);
  return pool_.Round(pool_.refs(), kOpGen, slot, seed, phase, &r);
}

void FillCoords(v1::OutputCheck* oc, int64_t index, const std::vector<int64_t>& shape) {
  if (index < 0) return;
  std::vector<int64_t> coords(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    coords[d] = index % shape[d];
    index /= shape[d];
  }
  for (int64_t c : coords) oc->add_first_mismatch_coords(c);
}

// Verifies the batch's calls from the snapshots the reference ranks took
// right after the candidate's reply (kOpSnapshot). `index` names the trial or
// timed batch in messages.
bool Judge::CheckBatch(const Cmd& batch, int index, v1::Phase phase, bool timed,
                       const char* label) {
  std::vector<Reply> rep;
  Cmd c = batch;
  c.op = kOpCheck;
  if (!pool_.RoundCmd(pool_.refs(), c, phase, &rep)) return false;
  const Tolerance tol = problem_->tolerance(dims_, o_.world_size, dtype_);
  const std::string what =
      timed ? fmt::format("{} {}", label, index) : fmt::format("trial {}", index);
  for (size_t i = 0; i < pool_.refs().size(); ++i) {
    if (rep[i].input_diff != 0) {
      const std::string d =
          fmt::format("{}: {} bytes of rank {}'s inputs were modified by the call", what,
                      rep[i].input_diff, pool_.refs()[i]->rank);
      out_.Cheat("input_mutation", d);
      return false;
    }
  }
  out_.AddCheck("input_mutation", true, false,
                "inputs identical to the generated ones after every checked call");
  bool bad = false;
  int64_t unwritten = 0;
  std::string first;
  auto* corr = out_.result().mutable_correctness();
  for (size_t i = 0; i < pool_.refs().size(); ++i) {
    const int rank = pool_.refs()[i]->rank;
    for (uint32_t o = 0; o < rep[i].n_checks; ++o) {
      const CheckRecord& c2 = rep[i].checks[o];
      unwritten += c2.unwritten;
      if (c2.mismatches == 0) continue;
      bad = true;
      v1::OutputCheck* oc = corr->add_checks();
      oc->set_trial(index);
      oc->set_rank(rank);
      oc->set_output(layout_.out[rank][o].desc.name);
      oc->set_elements(c2.elements);
      oc->set_mismatches(c2.mismatches);
      oc->set_max_abs_error(c2.max_abs);
      oc->set_max_rel_error(c2.max_rel);
      oc->set_atol(tol.atol);
      oc->set_rtol(tol.rtol);
      oc->set_first_mismatch_index(c2.first_index);
      oc->set_expected(c2.expected);
      oc->set_actual(c2.actual);
      oc->set_unwritten(c2.unwritten > 0);
      FillCoords(oc, c2.first_index, layout_.out[rank][o].desc.shape);
      if (first.empty())
        first = fmt::format(
            "rank {} output {}{}: {} of {} elements wrong ({} unwritten), first at "
            "index {}: expected {} got {}",
            rank, oc->output(),
            batch.count > 1 ? fmt::format(" (call {} of the batch)", rep[i].value) : "",
            c2.mismatches, c2.elements, c2.unwritten, c2.first_index, c2.expected, c2.actual);
    }
  }
  if (unwritten > 0)
    out_.AddCheck(
        "poison_unwritten", false, false,
        fmt::format("{} output elements still hold the poison pattern after the call", unwritten));
  else
    out_.AddCheck("poison_unwritten", true, false,
                  "every output element written on every checked call");
  if (bad) {
    if (timed) {
      const std::string d = fmt::format(
          "outputs wrong in {} (fresh inputs, every call verified from a snapshot taken when the "
          "call was declared complete) although the correctness trials passed: {}",
          what, first);
      out_.Cheat("timed_output_reverify", d);
    } else {
      out_.End(Result::WRONG_OUTPUT, fmt::format("{}: {}", what, first));
    }
    return false;
  }
  if (!timed) {
    // Keep a per-(rank, output) summary of the last passing trial.
    summaries_.clear();
    for (size_t i = 0; i < pool_.refs().size(); ++i)
      for (uint32_t o = 0; o < rep[i].n_checks; ++o) {
        v1::OutputCheck oc;
        const CheckRecord& c2 = rep[i].checks[o];
        oc.set_trial(index);
        oc.set_rank(pool_.refs()[i]->rank);
        oc.set_output(layout_.out[pool_.refs()[i]->rank][o].desc.name);
        oc.set_elements(c2.elements);
        oc.set_max_abs_error(c2.max_abs);
        oc.set_max_rel_error(c2.max_rel);
        oc.set_atol(tol.atol);
        oc.set_rtol(tol.rtol);
        oc.set_first_mismatch_index(-1);
        summaries_.push_back(oc);
      }
  }
  return true;
}

bool Judge::CheckOutputs(int slot, int trial, v1::Phase phase, bool timed) {
  std::vector<Reply> r;
  const Cmd one{kMagic, kOpSnapshot, static_cast<uint32_t>(slot), 1, 0, 0, 0};
  if (!pool_.RoundCmd(pool_.refs(), one, phase, &r)) return false;
  return CheckBatch(one, trial, phase, timed);
}

bool Judge::Correctness() {
  pool_.StartPhase();
  const v1::Phase ph = v1::PHASE_CORRECTNESS;
  auto* corr = out_.result().mutable_correctness();
  corr->set_trials(o_.trials);
  std::vector<Reply> r;
  for (int t = 0; t < o_.trials; ++t) {
    const int slot = sets_ + t;  // a fresh buffer set for every trial
    if (!Generate(slot, ph)) return false;
    int64_t wall = 0;
    if (!pool_.Round(pool_.refs(), kOpRun, slot, 0, ph, &r, &wall)) return false;
    trial_ref_wall_us_.push_back(wall / 1e3);
    if (!pool_.Round(pool_.cands(), kOpRun, slot, 0, ph, &r)) return false;
    if (!checks_.OutlivedCheck(slot, ph, fmt::format("trial {}", t))) return false;
    if (!CheckOutputs(slot, t, ph, false)) return false;
    corr->set_trials_passed(t + 1);
    if (t == o_.trials - 1) {
      // Determinism: the same inputs again, bitwise comparison with the
      // snapshot of the first run.
      if (!pool_.Round(pool_.refs(), kOpPoison, slot, 0, ph, &r)) return false;
      if (!pool_.Round(pool_.cands(), kOpRun, slot, 0, ph, &r)) return false;
      if (!checks_.OutlivedCheck(slot, ph, fmt::format("trial {} (rerun)", t))) return false;
      std::vector<Reply> diff;
      if (!pool_.Round(pool_.refs(), kOpSnapCompare, slot, 0, ph, &diff)) return false;
      uint64_t bytes = 0;
      for (const Reply& d : diff) bytes += d.value;
      if (!CheckOutputs(slot, t, ph, false)) return false;
      if (bytes != 0)
        out_.AddCheck("determinism", false, true,
                      fmt::format("{} output bytes differ between two runs on the same inputs "
                                  "(both within tolerance)",
                                  bytes));
      else
        out_.AddCheck("determinism", true, false, "bitwise identical outputs across two runs");
    }
  }
  for (auto& s : summaries_) *corr->add_checks() = s;
  return true;
}

// Official times are the judge's own clock over batches of back-to-back
// calls (docs/threat-model.md, "Timing"): inputs for the batch are generated
// while the candidate is frozen, right before it; the candidate's processes
// run only between the batch command and the last reply; the reference ranks
// snapshot every call's outputs immediately afterwards and every call is
// verified. A batch's per-call time = (wall - the reference side's smallest
// empty round trip) / calls. Reference and candidate batches alternate ABBA.
bool Judge::Timing() {
  pool_.StartPhase();
  const v1::Phase ph = v1::PHASE_TIMING;
  // The fixed cost of one round (pipes, wake-ups, a device-wide synchronize
  // on cuda), measured on the trusted side only: nothing the candidate does
  // can change it.
  // cuda: what is subtracted includes the GPU context switch every timed
  // batch starts with (kOpSwitch, then one empty kernel in the reference's
  // context).
  double o = 1e30;
  for (int i = 0; i < 7; ++i)
    if (!ProbeRoundTrip(ph, &o)) return false;
  samples_.overhead_us = o;
  ChooseBatchLength(o);
  const uint32_t batch_len = samples_.batch;

  // --iters counts timed calls per side in spirit; a batch holds B >= 16 of
  // them, so half as many batches (at least 6) give as many samples as
  // statistics need at a fraction of the rounds; warm-up: at most 2 batches.
  // Long batches (cuda, short calls) need fewer of them: about as many
  // timed calls per side as 32 x --iters, between 6 and (iters + 1) / 2
  // batches.
  const int most = std::max(6, (o_.iters + 1) / 2);
  const int batches = std::clamp(
      static_cast<int>((int64_t{32} * o_.iters + batch_len - 1) / std::max<uint32_t>(batch_len, 1)),
      6, most);
  const int warm = std::min(o_.warmup, 2);
  // Short batches (a quarter as many calls, at least 16), kShortBatches of
  // them at secretly drawn places among the timed ones, for the batch
  // consistency check (Finish): not official times.
  const uint32_t short_len = std::min(batch_len, std::max(16u, batch_len / 4));
  const bool with_shorts = short_len < batch_len;
  const int drips = Cuda() ? 0 : kDripBatches;
  const int total = batches + (with_shorts ? kShortBatches : 0) + kProgressProbes + drips;
  std::set<int> shorts, probes, drip;
  while (with_shorts && static_cast<int>(shorts.size()) < kShortBatches)
    shorts.insert(static_cast<int>(SecretSeed() % static_cast<uint64_t>(total)));
  // Probes come after at least kProbeAfter long batches (they need the
  // candidate's fastest batch), never on a short one.
  while (static_cast<int>(probes.size()) < kProgressProbes) {
    const int j = kProbeAfter + kShortBatches +
                  static_cast<int>(SecretSeed() % static_cast<uint64_t>(total - kProbeAfter - kShortBatches));
    if (shorts.count(j) == 0) probes.insert(j);
  }
  while (static_cast<int>(drip.size()) < drips) {
    const int j = kProbeAfter + static_cast<int>(SecretSeed() % static_cast<uint64_t>(total - kProbeAfter));
    if (shorts.count(j) == 0 && probes.count(j) == 0) drip.insert(j);
  }
  uint32_t next = 0;
  std::vector<double> ref_walls, cand_walls, cand_waits, cand_spans;  // us per timed batch
  // Probes that end inconclusive (the stop fell before the candidate woke
  // or after its batch ended: likely on batches of a few hundred us), or
  // whose findings are mixed, are followed by extra probed batches after the
  // timed ones, up to kExtraProbes, until ProbesSettled.
  int extra = 0, extra_drips = 0;
  auto drips_settled = [&] {
    if (drips == 0 || cand_walls.empty() || extra_drips >= kExtraDrips) return true;
    std::vector<double> r, c;
    for (double w : ref_walls) r.push_back(std::max(w - o, 0.0) / batch_len);
    for (double w : cand_walls) c.push_back(std::max(w - o, 0.0) / batch_len);
    const DripFree f = FreeTimes(r, c);
    const DripVerdict v = JudgeDrip(samples_.drip, f.ref_us, f.cand_us);
    return v.conclusive >= 2 && (v.slow == 0 || v.cheat);
  };
  for (int j = -warm;; ++j) {
    if (j >= total) {
      const bool probes_settled = extra >= kExtraProbes || cand_spans.empty() ||
                                  ProbesSettled(samples_.progress, kProgressProbes, Cuda());
      if (probes_settled && drips_settled()) break;
      if (!probes_settled) {
        probes.insert(j);
        ++extra;
      } else {
        drip.insert(j);
        ++extra_drips;
      }
    }
    const bool timed = j >= 0;
    const bool is_short = shorts.count(j) > 0;
    const bool is_probe = probes.count(j) > 0 && !cand_spans.empty();
    const uint32_t len = drip.count(j) > 0 ? std::min(batch_len, kDripCalls)
                         : is_short         ? short_len
                                            : batch_len;
    const Cmd batch{kMagic, kOpBatch, next, len, static_cast<uint32_t>(sets_), 0, 0};
    next = (next + len) % static_cast<uint32_t>(sets_);
    if (drip.count(j) > 0) {
      // Not a timed sample: a drip batch of each side (DripPair).
      if (!BatchInputs(batch, ph, kGenDrip) || !DripPair(batch, j, ph, o)) return false;
      continue;
    }
    if (!BatchInputs(batch, ph)) return false;
    // On batches drawn from secret randomness: the candidate's outputs are
    // still poison before it runs (nothing wrote them ahead of the call).
    if (timed && (j == 0 || j == batches - 1 || SecretSeed() % 4 == 0) &&
        !PoisonAtStart(batch, j, ph))
      return false;
    BatchWalls w;
    // A probed batch: the reference first (its outputs are what the probe
    // compares with), the candidate paused at a secret point.
    // The share is of the candidate's fastest batch from its command to its
    // last reply (a timed batch's clock runs on until the stop is verified,
    // which would put the pause after the end of a short batch).
    const double span_us =
        cand_spans.empty() ? 1 : *std::min_element(cand_spans.begin(), cand_spans.end());
    const int64_t pause_ns =
        is_probe ? static_cast<int64_t>(1e3 * span_us * (0.3 + 0.4 * (SecretSeed() % 1024) / 1024.0))
                 : 0;
    // Which side goes first is drawn from secret randomness (a fixed order
    // told the candidate when the reference's batch would follow its own:
    // red team irq_storm_ref aimed kernel timers at it), for probed batches
    // too: had they always run the reference first, a candidate that reads
    // its reference siblings' context switches in /proc would know which of
    // its batches could be probed (red team round 7, finding 4).
    const bool ref_first = (SecretSeed() & 1) == 0;
    if (!TimedPair(batch, j, ref_first, ph, &w, pause_ns, span_us * 1e3))
      return false;
    if (!CheckBatch(batch, j, ph, true)) return false;
    // One more empty round trip per batch: the smallest over the whole phase
    // is subtracted, so a host that was busy while the first probes ran
    // does not inflate it (seen on a loaded 2-core machine: 7 ms).
    if (!ProbeRoundTrip(ph, &o)) return false;
    if (!timed || is_probe) continue;  // a probed batch's times are not samples
    if (is_short) {
      samples_.ref_short_walls.push_back(w.ref_wall);
      samples_.cand_short_walls.push_back(w.cand_wall);
      continue;
    }
    ref_walls.push_back(w.ref_wall);
    cand_walls.push_back(w.cand_wall);
    cand_spans.push_back(w.cand_span);
    least_wait_share_ = std::min(least_wait_share_, w.cand_main_wait_share);
    samples_.ref_first.push_back(ref_first);
    cand_waits.push_back(w.cand_wait);
    samples_.ref_rep_us.push_back(w.ref_rep / batch_len);  // the ranks' own view (cross-check)
    samples_.cand_rep_us.push_back(w.cand_rep / batch_len);
  }
  samples_.overhead_us = o;
  samples_.short_len = short_len;
  for (double& w : samples_.ref_short_walls) w = std::max(w - o, 0.0) / short_len;
  for (double& w : samples_.cand_short_walls) w = std::max(w - o, 0.0) / short_len;
  const double n = batch_len;
  for (size_t i = 0; i < ref_walls.size(); ++i) {
    samples_.ref_us.push_back(std::max(ref_walls[i] - o, 0.0) / n);
    samples_.cand_us.push_back(std::max(cand_walls[i] - o, 0.0) / n);
    // Only for the cross-check with what the candidate ranks report: the
    // time their threads waited for a CPU while runnable (other load on the
    // host) is time no code of theirs ran, so no account of theirs covers it.
    samples_.cand_unqueued_us.push_back(std::max(cand_walls[i] - o - cand_waits[i], 0.0) / n);
  }
  if (!checks_.OutlivedCheck(static_cast<int>((next + sets_ - 1) % sets_), ph,
                             "after the last timed batch"))
    return false;
  out_.AddCheck(
      "timed_output_reverify", true, false,
      fmt::format("every call of every timed batch verified ({} batches of {} calls, fresh "
                  "inputs for each call)",
                  batches + warm, batch_len));
  out_.AddCheck("poison_at_start", true, false,
                fmt::format("outputs still poison before the call on {} secretly chosen batches",
                            poison_checks_));
  return true;
}

// One empty round trip of the reference ranks, timed like a batch (cuda:
// after the GPU context switch a batch starts with); the least one so far
// into *min_us.
bool Judge::ProbeRoundTrip(v1::Phase ph, double* min_us) {
  std::vector<Reply> r;
  int64_t wall = 0;
  const Cmd sw{kMagic, kOpSwitch, 0, 1, 0, 0, 0};
  const Cmd probe{kMagic, Cuda() ? kOpIdle : kOpSync, 0, 1, 0, 0, 0};
  if (Cuda() && !pool_.RoundCmd(pool_.refs(), sw, ph, &r)) return false;
  if (!pool_.RefTimedRound(probe, ph, &r, &wall)) return false;
  *min_us = std::min(*min_us, wall / 1e3);
  return true;
}

// Calls per batch: enough for BatchTargetNs() at the reference's speed
// (its fastest trial: noise only adds), and at least 16 where the sets
// allow, so the stop at the batch's end (which scheduling can delay on a
// loaded host) weighs little per call.
void Judge::ChooseBatchLength(double o) {
  const double fastest = trial_ref_wall_us_.empty() ? 1.0
                                                    : *std::min_element(trial_ref_wall_us_.begin(),
                                                                        trial_ref_wall_us_.end());
  const double per_call_us = std::max(1.0, fastest - o);
  uint32_t cap = static_cast<uint32_t>(sets_);
  for (int rk = 0; rk < o_.world_size; ++rk) {
    int64_t out = 0;
    for (const Placed& p : layout_.out[rk]) out += p.bytes;
    cap = std::min(cap, MaxBatch(out));
  }
  cap = std::max(cap, 1u);
  samples_.batch = static_cast<uint32_t>(std::clamp<double>(
      std::ceil(BatchTargetNs(Cuda()) / 1e3 / per_call_us), std::min(16u, cap), cap));
}

// Fresh inputs for every call of the batch, from one secret seed.
bool Judge::BatchInputs(const Cmd& batch, v1::Phase ph, uint32_t flags) {
  std::vector<Reply> r;
  Cmd gen = batch;
  gen.op = kOpGen;
  gen.flags = flags;
  gen.seed = SecretSeed();
  if (!o_.reveal_seeds_file.empty()) revealed_seeds_.push_back(gen.seed);
  return pool_.RoundCmd(pool_.refs(), gen, ph, &r);
}

// poison_at_start: no output element of the batch was written before the
// candidate is called.
bool Judge::PoisonAtStart(const Cmd& batch, int j, v1::Phase ph) {
  std::vector<Reply> r;
  Cmd pc = batch;
  pc.op = kOpPoisonCheck;
  if (!pool_.RoundCmd(pool_.refs(), pc, ph, &r)) return false;
  uint64_t written = 0;
  for (const Reply& x : r) written += x.value;
  if (written != 0) {
    const std::string d = fmt::format(
        "timed batch {}: {} output elements were written before the candidate was called", j,
        written);
    out_.Cheat("poison_at_start", d);
    return false;
  }
  ++poison_checks_;
  return true;
}

// A drip batch of each side on the batch's slots (drip_check.h; the
// inputs were generated with kGenDrip: the candidate's are decoys but the
// first call's). The reference computes the batch's outputs, runs it again
// dripped by a watcher thread of its own (the baseline: what the hand-offs
// cost), then watches the candidate's drip batch: each call's outputs are
// compared at its return and only then the next call's inputs copied in.
// Every output is checked again from a snapshot afterwards; one that was not
// complete at its call's return but is by the end was deferred.
bool Judge::DripPair(const Cmd& batch, int j, v1::Phase ph, double overhead_us) {
  const int64_t t_start = MonotonicNs();
  std::vector<Reply> r, rr, wr;
  const uint64_t limit_ms = static_cast<uint64_t>(std::max(1.0, o_.timeout_s) * 1000);
  // The reference's free-running batch, timed: its per-call time next to
  // its drip batch, under the same load (the timed batches' median can be
  // far off on a loaded host: red team round 6 saw it swing 35-90 us while
  // the drip stayed at 63 us).
  int64_t ref_wall = 0;
  if (!pool_.RoundCmd(pool_.refs(), batch, ph, &r, &ref_wall)) return false;
  DripSample s;
  s.ref_free_us = std::max(ref_wall / 1e3 - overhead_us, 0.0) / std::max<uint32_t>(batch.count, 1);
  Cmd self = batch;
  self.op = kOpDrip;
  self.seed = limit_ms;
  if (!pool_.RoundCmd(pool_.refs(), self, ph, &rr)) return false;
  Cmd watch = batch;
  watch.op = kOpDripWatch;
  watch.seed = limit_ms;
  pool_.SetDripStop(false);
  if (!pool_.Send(pool_.refs(), watch)) return false;
  const CandidateWindow window(pool_.cands());
  const int64_t ref_cpu0 = RanksCpuNs(pool_.refs());
  Cmd calls = batch;
  calls.op = kOpDrip;
  calls.seed = 0;
  int64_t wall = 0;
  if (!pool_.CandRound(calls, ph, &r, &wall)) return false;
  // Starved when other processes held the CPUs: the candidate's main
  // threads waited for a CPU (share) that neither its own threads nor the
  // reference's watchers used (a waiting thread waits behind someone). Not
  // relative to the candidate's own least wait in its timed batches: a
  // candidate whose main threads sleep there while its workers compute set
  // that baseline to ~0 and read "starved" on every drip batch (red team
  // round 7 worker_turns_fuse: 5-6 of 6 inconclusive, OK ~10x against an
  // honest 6.7x).
  const double share = window.WaitShare(wall);
  const double used = window.Used(wall) +
                      (RanksCpuNs(pool_.refs()) - ref_cpu0) /
                          std::max(1.0, static_cast<double>(wall) * window.cpus());
  const double foreign = std::min(share, 1.0 - used);
  // The candidate's ranks replied and are frozen: no call can return any
  // more, so a watcher still waiting for one stops (it answers t1_ns = 1).
  pool_.SetDripStop(true);
  if (!pool_.Collect(pool_.refs(), kOpDripWatch, ph, &wr)) return false;
  for (size_t i = 0; i < wr.size(); ++i) {
    if (wr[i].t1_ns != 1) continue;
    // The harness replies to a drip batch only after its last call returned
    // (or with an error, which CandRound has reported): this reply was
    // written by candidate code (red team round 7 drip_forged_reply_blame).
    out_.Cheat("result_channel",
               fmt::format("drip batch {}: candidate rank {} replied before its calls had "
                           "returned ({} of {} verified): a reply the harness never sends",
                           j, pool_.refs()[i]->rank, wr[i].value, batch.count));
    return false;
  }
  Cmd snap = batch;
  snap.op = kOpSnapshot;
  if (!pool_.RoundCmd(pool_.refs(), snap, ph, &r)) return false;
  if (!CheckBatch(batch, j, ph, true, "drip batch")) return false;
  int64_t deferred = -1;
  int deferred_rank = 0;
  bool ref_ok = true;
  for (size_t i = 0; i < wr.size(); ++i) {
    s.ref_service_us = std::max(s.ref_service_us, rr[i].t0_ns / 1e3);
    s.cand_service_us = std::max(s.cand_service_us, wr[i].t0_ns / 1e3);
    ref_ok = ref_ok && rr[i].input_diff == 0;
    if (wr[i].input_diff != 0 && deferred < 0) {
      deferred = static_cast<int64_t>(wr[i].input_diff) - 1;
      deferred_rank = pool_.refs()[i]->rank;
    }
  }
  if (deferred >= 0) {
    out_.Cheat("batch_drip",
               fmt::format("drip batch {}: rank {}'s call {} returned before its outputs matched "
                           "the reference's, and they did by the end of the batch (work deferred "
                           "past the call's return)",
                           j, deferred_rank, deferred));
    return false;
  }
  s.starved = !ref_ok || foreign > 0.25;
  s.calls = static_cast<int>(batch.count);
  samples_.drip.push_back(s);
  samples_.drip_ms += (MonotonicNs() - t_start) / 1e6;
  return true;
}

// The candidate's batch, paused `pause_ns` after its command: while it is
// frozen the reference ranks count the calls already done (kOpProgress;
// against the batch's reference outputs: when the reference's batch has not
// run yet, `ref_ran` false, it runs first, untimed, while the candidate is
// frozen), against the share of its fastest
// batch (span_ns, command to last reply) that passed until the stop was
// sent (the judge's clock: the run-queue waits of the candidate's threads
// are not subtracted, a thread that stays runnable would inflate them).
bool Judge::ProgressProbe(const Cmd& batch, v1::Phase ph, bool ref_ran, int64_t pause_ns,
                          double span_ns,
                          std::vector<Reply>* r) {
  const CandidateWindow window(pool_.cands());
  auto probe = [&](int64_t frozen_after_ns, bool pending) {
    std::vector<Reply> pr;
    if (!ref_ran && !pool_.RoundCmd(pool_.refs(), batch, ph, &pr)) return false;
    Cmd pc = batch;
    pc.op = kOpProgress;
    if (!pool_.RoundCmd(pool_.refs(), pc, ph, &pr)) return false;
    uint64_t done = batch.count;
    for (const Reply& x : pr) done = std::min<uint64_t>(done, x.value);
    ProgressSample s;
    s.elapsed = std::max<double>(0.0, frozen_after_ns) / std::max(span_ns, 1.0);
    s.done = static_cast<double>(done) / std::max<uint32_t>(batch.count, 1);
    s.calls = static_cast<int>(batch.count);
    s.replies_pending = pending;
    // helper-fp6: at world size 1, tiny, batches of ~50 us took the stop at
    // 98-111% of the span whatever the secret point (SIGSTOP of every
    // thread, then verified): 0% done there is no finding.
    s.late_stop = static_cast<double>(frozen_after_ns - pause_ns) > 0.25 * span_ns;
    s.main_idle = window.MainCpuNs() < kMinMainRunShare * static_cast<double>(frozen_after_ns) *
                                           std::min<int>(window.cpus(), o_.world_size);
    // Starved by other load (an honest candidate then lags), or held up by
    // its own threads (CandidateWindow).
    const double share = window.WaitShare(frozen_after_ns), used = window.Used(frozen_after_ns);
    s.starved = share > least_wait_share_ + 0.25 && used < 0.5;
    s.own_load = share > least_wait_share_ + 0.25 && !s.starved;
    samples_.progress.push_back(s);
    return true;
  };
  return pool_.CandPausedRound(batch, ph, pause_ns, probe, r);
}

// One timed batch on each side, in the order given (ABBA over batches). The
// candidate's outputs are snapshotted at once after its batch, while it is
// frozen, and its threads, processes and (cuda) the GPU checked.
bool Judge::TimedPair(const Cmd& batch, int j, bool ref_first, v1::Phase ph, BatchWalls* w,
                      int64_t pause_ns, double span_ns) {
  std::vector<Reply> r;
  const Cmd sw{kMagic, kOpSwitch, 0, 1, 0, 0, 0};
  auto span = [](const std::vector<Reply>& rs) {
    int64_t m = 0;
    for (const Reply& x : rs) m = std::max(m, x.t1_ns - x.t0_ns);
    return m / 1e3;
  };
  for (int k = 0; k < 2; ++k) {
    int64_t wall = 0;
    if (Cuda() && !pool_.RoundCmd(pool_.refs(), sw, ph, &r)) return false;
    if ((k == 0) == ref_first) {
      if (!pool_.RefTimedRound(batch, ph, &r, &wall)) return false;
      w->ref_wall = wall / 1e3;
      w->ref_rep = span(r);
    } else {
      // Waits for a CPU, of the candidate's rank threads and of the judge
      // itself (while it waits, it neither reads replies nor stops ranks).
      const std::vector<int64_t> wait0 = RunDelays(pool_.cands());
      const int64_t judge_wait0 = ProcessRunDelayNs(getpid());
      if (pause_ns > 0) {
        if (!ProgressProbe(batch, ph, /*ref_ran=*/ref_first, pause_ns, span_ns, &r)) return false;
      } else {
        const std::vector<int64_t> main0 = RunDelays(pool_.cands(), MainThreadRunDelayNs);
        if (!pool_.CandRound(batch, ph, &r, &wall)) return false;
        w->cand_main_wait_share = MaxGrowth(main0, RunDelays(pool_.cands(), MainThreadRunDelayNs)) /
                                  std::max(1.0, static_cast<double>(wall));
      }
      w->cand_span = pool_.last_reply_ns() / 1e3;
      w->cand_wall = wall / 1e3;
      w->cand_rep = span(r);
      const int64_t judge_wait1 = ProcessRunDelayNs(getpid());
      w->cand_wait =
          (MaxGrowth(wait0, RunDelays(pool_.cands())) +
           (judge_wait0 >= 0 && judge_wait1 >= judge_wait0 ? judge_wait1 - judge_wait0 : 0)) /
          1e3;
      // At once, while the candidate is frozen: what its calls left in the
      // outputs when it declared them complete.
      Cmd snap = batch;
      snap.op = kOpSnapshot;
      std::vector<Reply> sr;
      if (!pool_.RoundCmd(pool_.refs(), snap, ph, &sr)) return false;
      const std::string when = fmt::format("timed batch {}", j);
      if (!checks_.ThreadCheck(when) || !checks_.ProcessCheck(when) || !checks_.IdleCheck(ph, when))
        return false;
    }
  }
  return true;
}

// The timing verdict: statistics, the cross-checks over the samples, the
// speedup and the roofline, then OK unless something decided otherwise.
void Judge::Finish() {
  const TimingSummary t = SummarizeTiming(samples_, o_.iters, &out_.result());
  checks_.WallclockCrosscheck(samples_, t);
  checks_.FrozenWhileIdle();
  checks_.IdleLatencyVerdict();
  if (t.cand.median > 0) out_.result().set_speedup(t.ref.median / t.cand.median);
  checks_.BatchConsistency(samples_);
  if (out_.undecided()) checks_.BatchProgress(samples_);
  if (out_.undecided()) checks_.BatchDrip(samples_);

  const Cost cost = problem_->cost(dims_, o_.world_size, DtypeSize(dtype_));
  const RooflineCeilings ceilings =
      ChooseCeilings(o_, cuda_.names.empty() ? "" : cuda_.names[0], dtype_, host_memcpy_gbps_);
  const double roof_us =
      FillRoofline(cost, ceilings, t.ref.median, t.cand.median, out_.result().mutable_roofline());
  SpeedupPlausibility(roof_us, t.cand.median, &out_);
  if (out_.undecided())
    out_.End(Result::OK,
             fmt::format("OK: {} trials correct; candidate median {:.1f} us, reference "
                         "{:.1f} us, speedup {:.3f}x ({} input sets)",
                         o_.trials, t.cand.median, t.ref.median, out_.result().speedup(), sets_));
}

// Validates the request and resolves what it names (problem, dtype, rank
// binary, devices, size); opens the candidate. Errors are the request's own.
absl::Status Judge::ResolveRequest() {
  ASSIGN_OR_RETURN(problem_, FindProblem(o_.problem));
  ASSIGN_OR_RETURN(dtype_, ParseDtype(o_.dtype));
  rank_exe_ = o_.worker_exe;
  if (o_.backend == "cuda") {
    // Rank processes of the cuda backend are a separate binary next to the
    // worker (it links cudart/NCCL/cuBLAS; the worker itself stays light so
    // host ranks start fast).
    char self[4096] = {0};
    const ssize_t n = readlink(o_.worker_exe.c_str(), self, sizeof self - 1);
    std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : o_.worker_exe;
    dir = dir.substr(0, dir.rfind('/') + 1);
    rank_exe_ = dir + "pkforge-cuda-rank";
    if (access(rank_exe_.c_str(), X_OK) != 0)
      return absl::UnimplementedError(fmt::format(
          "backend cuda is not available in this build ({} not found: built without nvcc/NCCL)",
          rank_exe_));
    ASSIGN_OR_RETURN(cuda_, ProbeCudaDevices());
    if (o_.world_size > cuda_.device_count)
      return absl::FailedPreconditionError(
          fmt::format("backend cuda: world size {} needs {} GPUs, {} visible", o_.world_size,
                      o_.world_size, cuda_.device_count));
  } else if (o_.backend != "host") {
    return absl::UnimplementedError("backend '" + o_.backend + "' is not available in this build");
  }
  if (o_.world_size < 1 || o_.world_size > kMaxWorld)
    return absl::InvalidArgumentError("world size out of range");
  if (o_.trials < 1 || o_.iters < 1 || o_.warmup < 0)
    return absl::InvalidArgumentError("trials and iters must be >= 1");
  ASSIGN_OR_RETURN(dims_, ResolveSize(*problem_, o_.size, o_.world_size));
  candidate_file_.open(o_.candidate, std::ios::binary);
  if (!candidate_file_) return absl::NotFoundError("cannot read candidate " + o_.candidate);
  std::string bytes((std::istreambuf_iterator<char>(candidate_file_)),
                    std::istreambuf_iterator<char>());
  candidate_sha256_ = Sha256Hex(bytes);
  return absl::OkStatus();
}

// What was asked, into the result.
void Judge::DescribeRequest() {
  Result& result = out_.result();
  result.set_problem(o_.problem);
  result.set_backend(Cuda() ? v1::BACKEND_CUDA : v1::BACKEND_HOST);
  result.set_world_size(o_.world_size);
  result.set_dtype(dtype_ == PKF_F32   ? v1::DTYPE_F32
                   : dtype_ == PKF_F16 ? v1::DTYPE_F16
                                       : v1::DTYPE_BF16);
  if (IsSizePreset(o_.size))
    result.mutable_size()->set_preset(o_.size);
  else
    for (const auto& [k, v] : dims_)
      (*result.mutable_size()->mutable_dims()->mutable_values())[k] = v;
  result.set_candidate_sha256(candidate_sha256_);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  result.mutable_device_state()->set_hostname(host);
}

// K input sets so the rotated data exceeds 3x the last-level cache (capped);
// the data layout and the scratch size that follow from it.
void Judge::PlanInputSets() {
  DataLayout one = MakeLayout(*problem_, dims_, o_.world_size, dtype_, 1);
  int64_t llc = LastLevelCacheBytes();
  if (Cuda()) {
    // Per-rank data of one set vs the L2 of one GPU (the largest in use).
    llc = 0;
    for (int d = 0; d < o_.world_size; ++d) llc = std::max<int64_t>(llc, cuda_.l2_bytes[d]);
    one.slot_bytes = std::max<int64_t>(one.max_rank_bytes, 1);
  }
  sets_ = static_cast<int>(std::clamp<int64_t>(
      (3 * llc + one.slot_bytes - 1) / std::max<int64_t>(one.slot_bytes, 1), 2, kMaxInputSets));
  if (Cuda()) {
    // More sets than the cache rule needs, so that a timed batch of short
    // calls can be long: every batch pays a few fixed costs that differ
    // between the sides (the candidate wakes from a stop of milliseconds,
    // the reference from one of microseconds; ~90 us per batch measured on
    // the H200), which weigh ~20% on a batch of 45 calls of 6 us and ~2% on
    // one of 5 ms. Bounded by device memory (SetBudgetBytes() per side and
    // rank) and by MaxBatch().
    const int64_t by_memory = SetBudgetBytes() / std::max<int64_t>(one.slot_bytes, 1);
    sets_ = static_cast<int>(
        std::clamp<int64_t>(std::max<int64_t>(sets_, by_memory), 2, kMaxBatchCalls));
  }
  layout_ = MakeLayout(*problem_, dims_, o_.world_size, dtype_, sets_ + o_.trials);
  scratch_bytes_ =
      static_cast<uint64_t>(std::max<int64_t>(1 << 20, 2 * layout_.max_rank_bytes + 4096));
  scratch_bytes_ = (scratch_bytes_ + 4095) / 4096 * 4096;
}

// The static scan, the judge's own hardening, then the rank processes. The
// order is part of the security argument: nothing of the candidate runs
// before the judge is non-dumpable and a subreaper.
bool Judge::Launch(int64_t t_start) {
  checks_.StaticScan(problem_->forbidden_calls);
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Before any rank exists: no candidate process may read our memory,
  // descriptors (the result channel) or environment through /proc.
  bool ok = true;
  if (absl::Status st = MakeNonDumpable(); !st.ok()) {
    out_.HarnessFault(std::string(st.message()));
    ok = false;
  }
  // The host ceiling is measured now, before any candidate code ran: two
  // 32 MiB buffers allocated at the end, when a candidate may have filled
  // the memory cgroup with pages no process owns (a tmpfs file, a SysV
  // segment), made the judge the OOM killer's only choice (red team
  // tmpfs_file_oom_blame, sysv_shm_oom_blame: no result).
  if (!Cuda()) host_memcpy_gbps_ = MeasureMemcpyGbps();
  ok = ok && pool_.Spawn(rank_exe_, dims_, layout_, scratch_bytes_);
  PhaseDiag("spawn", t_start);
  return ok;
}

// The setup phase: candidate ranks hardened, reference setup and one
// reference call, then the candidate's pkf_setup and its thread baseline.
bool Judge::SetUp() {
  pool_.TrackProcesses();
  pool_.StartPhase();
  std::vector<Reply> r;
  // Each candidate rank reports that it is hardened before it loads anything.
  bool ok = pool_.Collect(pool_.cands(), kOpHello, v1::PHASE_SETUP, &r);
  if (Cuda()) {
    // The candidate ranks' harness set-up (device, buffers, NCCL; no
    // candidate code yet) side by side with the reference's, then the
    // reference ranks open the candidate's buffers from the mailbox while
    // only the harness has written it: nothing the candidate writes there
    // later is read (red team mailbox_garbage: the reference failed to open
    // garbage, a HARNESS_ERROR).
    const Cmd init{kMagic, kOpInit, 0, 1, 0, 0, 0};
    std::vector<Reply> ci;
    ok = ok && pool_.Send(pool_.cands(), init) &&
         pool_.Round(pool_.refs(), kOpSetup, 0, 0, v1::PHASE_SETUP, &r);
    if (ok) versions_ = r[0].message;
    ok = ok && pool_.Collect(pool_.cands(), kOpInit, v1::PHASE_SETUP, &ci) &&
         pool_.Round(pool_.refs(), kOpAttach, 0, 0, v1::PHASE_SETUP, &ci);
  } else {
    ok = ok && pool_.Round(pool_.refs(), kOpSetup, 0, 0, v1::PHASE_SETUP, &r);
  }
  // One reference call before any candidate code runs: lazy allocations of
  // the reference (cuBLAS workspaces, NCCL buffers) cannot be starved later.
  const Cmd warm{kMagic,      kOpGen, static_cast<uint32_t>(sets_), 1, 0, kGenReferenceOnly,
                 SecretSeed()};
  ok = ok && pool_.RoundCmd(pool_.refs(), warm, v1::PHASE_SETUP, &r) &&
       pool_.Round(pool_.refs(), kOpRun, static_cast<uint32_t>(sets_), 0, v1::PHASE_SETUP, &r);
  ok = ok && pool_.Round(pool_.cands(), kOpSetup, 0, 0, v1::PHASE_SETUP, &r);
  if (ok)
    for (RankProc* p : pool_.cands()) p->baseline_threads = CountThreads(p->pid);
  ok = ok && checks_.ProcessCheck("after pkf_setup");
  return ok;
}

// Every rank told to exit; nothing of the candidate may outlive its ranks;
// then the verdict.
void Judge::Teardown() {
  checks_.IsolationCheck();
  pool_.StartPhase();
  pool_.SetDeadline(MonotonicNs() + 5'000'000'000);
  std::vector<Reply> r;
  const Cmd exit_cmd{kMagic, kOpExit, 0, 1, 0, 0, 0};
  if (!pool_.CandRound(exit_cmd, v1::PHASE_TEARDOWN, &r, nullptr, /*refreeze=*/false) ||
      !pool_.Round(pool_.refs(), kOpExit, 0, 0, v1::PHASE_TEARDOWN, &r))
    return;
  // Containment: once the candidate ranks are gone, nothing they started
  // may be left (orphans come back to us, the subreaper).
  pool_.AwaitCandidateExit();
  checks_.LeftoverCheck();
  if (!o_.skip_timing) {
    Finish();
  } else if (out_.undecided()) {
    out_.End(Result::OK, fmt::format("OK: {} trials correct (timing skipped)", o_.trials));
  }
}

// With every rank gone: the checks, the stage times, and (tests only) the
// seeds.
void Judge::Publish(int64_t t_start) {
  out_.PublishChecks();
  Result& result = out_.result();
  result.mutable_stages()->set_run_ms((MonotonicNs() - t_start) / 1e6);
  result.mutable_stages()->set_total_ms((MonotonicNs() - t_start) / 1e6);
  result.set_finished_wall_us(std::chrono::duration_cast<std::chrono::microseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
  if (!o_.reveal_seeds_file.empty()) {
    // Only now, with every rank process gone.
    std::ofstream f(o_.reveal_seeds_file);
    for (uint64_t s : revealed_seeds_) f << s << "\n";
  }
}

absl::StatusOr<Result> Judge::Evaluate() {
  const int64_t t_start = MonotonicNs();
  RETURN_IF_ERROR(ResolveRequest());
  DescribeRequest();
  PlanInputSets();
  bool ok = Launch(t_start);
  ok = ok && SetUp();
  PhaseDiag("setup", t_start);
  if (ok) checks_.IsolationCheck();
  ok = ok && out_.undecided() && Correctness();
  PhaseDiag("correctness", t_start);
  ok = ok && (o_.skip_timing || Timing());
  PhaseDiag("timing", t_start);
  if (Cuda()) RecordDeviceState(versions_);  // clocks and temperature right after timing
  if (ok) Teardown();
  pool_.KillAndReapAll();
  PhaseDiag("teardown", t_start);
  Publish(t_start);
  return out_.result();
}

}  // namespace

absl::StatusOr<Result> Evaluate(const LaunchOptions& options) {
  Judge j(options);
  return j.Evaluate();
}

std::string ResultToJson(const Result& result) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = false;
  auto st = google::protobuf::util::MessageToJsonString(result, &out, opts);
  if (!st.ok()) return "{}";
  return out;
}

std::string ResultToText(const Result& r) {
  std::string s = fmt::format("{}: {}\n", Result::Status_Name(r.status()), r.message());
  for (const auto& f : r.failures())
    s += fmt::format("  failure rank {} phase {}: {}\n", f.rank(), v1::Phase_Name(f.phase()),
                     f.error());
  for (const auto& c : r.cheat_checks())
    s += fmt::format("  check {:<22} {}{}: {}\n", c.check(), c.passed() ? "pass" : "FAIL",
                     c.flag_only() ? " (flag)" : "", c.detail());
  if (r.has_speedup())
    s += fmt::format(
        "  reference median {:.2f} us, candidate median {:.2f} us (cv {:.3f}), speedup {:.3f}x\n",
        r.reference().median_us(), r.candidate().median_us(), r.candidate().cv(), r.speedup());
  for (const auto& f : r.flags()) s += "  flag: " + f + "\n";
  return s;
}

}  // namespace pkforge::kernels
