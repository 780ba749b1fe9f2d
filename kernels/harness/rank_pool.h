// The rank processes of one evaluation, and the judge's side of the protocol
// with them (kernels/harness/protocol.h).
//
// Spawn() creates the shared segments of both sides and starts 2 x world_size
// rank processes: a trusted reference rank and a candidate rank per rank
// index, each a fresh exec of the rank binary in one process group, with an
// allowlisted environment, pinned in pairs to one CPU (PKFORGE_PIN_RANKS=0:
// not pinned), their stdout/stderr in a memfd. Only reference ranks get the
// candidate side's data segment; nothing of the reference side reaches a
// candidate rank.
//
// A round sends one command to a set of ranks and collects every reply, each
// wait bounded by the phase deadline (StartPhase); a round of reference
// ranks always gets at least 5 s of its own. Every failure is attributed: a
// rank that dies (its exit status or signal), one that gives no reply (with
// where it was stuck: barrier, candidate code, harness), a malformed or
// error reply. Whatever goes wrong on a reference rank is the harness's
// fault (HARNESS_ERROR), never the candidate's; a candidate rank writing
// anything but replies on its channel is CHEAT_DETECTED (result_channel).
//
// Candidate processes are frozen (SIGSTOP, containment.h) whenever the judge
// does not need them: CandRound() thaws them for one round, checks that none
// ran while frozen (frozen_while_idle) and stops them again; its clock ends
// when every candidate process is verified stopped, not at the last reply.
// RefTimedRound() stops and continues the reference ranks in the same
// sequence, so that both sides' timed rounds end alike. Timed rounds
// (kOpRun, kOpBatch) also check that each rank's reported interval lies in
// the judge's own window (window_violations(), for wallclock_crosscheck).
//
// Every bool-returning call returns false when the evaluation has ended; the
// Outcome then holds the status and its details. KillAndReapAll() (also run
// by the destructor) kills every candidate process at any depth, the ranks,
// and anything else re-parented to the judge (a child subreaper), and reaps
// them all.
//
// Thread safety: none; used by the judge's single thread. Not copyable.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/harness/containment.h"
#include "kernels/harness/judge.h"
#include "kernels/harness/outcome.h"
#include "kernels/harness/problem.h"
#include "kernels/harness/protocol.h"
#include "kernels/harness/shm.h"
#include "pkforge/v1/common.pb.h"

namespace pkforge::kernels {

// Where the ranks run (PKFORGE_PIN_RANKS, rank_pool_start.cc), from the
// judge's allowed CPUs: reference rank r and candidate rank r share one CPU,
// the first allowed one left to the judge when there is more than one
// (RankCpus); a cuda reference rank's drip watcher thread, which spins in a
// queued drip batch (kernels/cuda/rank_cuda_drip.cc), gets a CPU of its own
// after those, -1 where none is left (WatcherCpus). Pure functions.
std::vector<int> RankCpus(const std::vector<int>& allowed, int world);
std::vector<int> WatcherCpus(const std::vector<int>& allowed, int world);
// The CPUs the calling thread may run on (sched_getaffinity), ascending;
// empty when they cannot be read. What the two above are given.
std::vector<int> AllowedCpus();

// One rank process and the judge's ends of its pipes.
struct RankProc {
  bool ref = false;
  int rank = 0;
  int pid = -1;
  int cmd_fd = -1;
  int reply_fd = -1;
  int err_fd = -1;  // memfd with its stdout and stderr
  bool reaped = false;
  int wstatus = 0;
  int baseline_threads = 0;  // candidate ranks: threads right after pkf_setup
};

class RankPool {
 public:
  // options and *outcome must outlive the pool.
  RankPool(const LaunchOptions& options, Outcome* outcome) : o_(options), out_(outcome) {}
  ~RankPool() { KillAndReapAll(); }
  RankPool(const RankPool&) = delete;
  RankPool& operator=(const RankPool&) = delete;

  // Creates the segments and starts every rank process (rank_exe: the worker
  // or pkforge-cuda-rank). Nothing is sent to them yet.
  bool Spawn(const std::string& rank_exe, const Dims& dims, const DataLayout& layout,
             uint64_t scratch_bytes);
  // After Spawn: from now on the candidate processes (ranks and everything
  // they start) are tracked, frozen and thawed as a whole.
  void TrackProcesses();

  // The phase deadline: now + the phase timeout, or an explicit one.
  void StartPhase() {
    deadline_ns_ = MonotonicNs() + int64_t(o_.timeout_s * 1e9);
    phase_limit_s_ = o_.timeout_s;
  }
  // The phase's deadline other than --timeout (a timeout names the limit
  // that applied).
  void SetDeadline(int64_t deadline_ns) {
    deadline_ns_ = deadline_ns;
    phase_limit_s_ = std::max<double>(0, static_cast<double>(deadline_ns - MonotonicNs()) / 1e9);
  }

  // Writes `cmd` to each process's command channel without blocking. False
  // (the outcome says why) when one could not be written whole: its channel
  // was full, which only another writer can cause (CHEAT_DETECTED
  // result_channel for a candidate rank, a harness fault for a reference
  // one). A dead rank (EPIPE) is left to Collect, which attributes it.
  bool Send(const std::vector<RankProc*>& procs, const Cmd& cmd);
  // Waits for one reply of `op` from each process.
  bool Collect(const std::vector<RankProc*>& procs, uint32_t op, v1::Phase phase,
               std::vector<Reply>* replies);
  // A one-call command to refs() (a plain round) or cands() (CandRound).
  bool Round(const std::vector<RankProc*>& procs, uint32_t op, uint32_t slot, uint64_t seed,
             v1::Phase phase, std::vector<Reply>* replies, int64_t* wall_ns = nullptr);
  // Send + Collect; wall_ns: from the send to the last reply.
  bool RoundCmd(const std::vector<RankProc*>& procs, const Cmd& cmd, v1::Phase phase,
                std::vector<Reply>* replies, int64_t* wall_ns = nullptr,
                int64_t* t_send_ns = nullptr);
  // Collect, then the wall time since t_send and the ranks' intervals
  // checked against it (RoundCmd's second half).
  bool CollectRound(const std::vector<RankProc*>& procs, uint32_t op, v1::Phase phase,
                    int64_t t_send, std::vector<Reply>* replies, int64_t* wall_ns);
  // A timed reference round: its clock stops when every reference process
  // is verified stopped, exactly as a candidate round's does (CandRound).
  bool RefTimedRound(const Cmd& cmd, v1::Phase phase, std::vector<Reply>* replies,
                     int64_t* wall_ns);
  // A round on the candidate ranks: they are thawed for it and frozen again
  // as soon as every reply is in (`refreeze` false only for kOpExit).
  bool CandRound(const Cmd& cmd, v1::Phase phase, std::vector<Reply>* replies,
                 int64_t* wall_ns = nullptr, bool refreeze = true);
  // ns from the command of the last CandRound to its last reply (the clock
  // of a timed round runs on until the stop is verified).
  int64_t last_reply_ns() const { return last_reply_ns_; }
  // MonotonicNs when the last CandRound's last reply was read.
  int64_t last_reply_at_ns() const { return last_reply_at_ns_; }
  // The median, over the reference's timed batches so far, of the time from
  // a batch's command to its first call (the last rank's, after the
  // batch's barrier): how long trusted code took to get going on this
  // machine just now; 0 before any. The progress probes' start allowance
  // (Judge::ProgressProbe).
  double RefStartMedianNs() const;
  // PKFORGE_TIMING_DIAG=1: one stderr line per command kind and side with
  // its rounds and their summed time from the send to the last reply
  // ("round-diag"), so one run shows where an evaluation's time goes.
  void PrintRoundDiag() const;
  // A candidate round paused once, not timed: `pause_after_ns` after the
  // command the candidate is frozen (at once if every rank has replied),
  // `while_frozen(ns from the command to the stop, some reply still
  // pending)` runs (a progress probe by the reference ranks), then the
  // candidate is thawed to finish the round and frozen again.
  bool CandPausedRound(const Cmd& cmd, v1::Phase phase, int64_t pause_after_ns,
                       const std::function<bool(int64_t frozen_after_ns, bool pending)>& while_frozen,
                       std::vector<Reply>* replies);
  // Host drip batches: the reference side's drip_stop word (shm.h), set
  // once the candidate's drip round is over, cleared before the next.
  void SetDripStop(bool stop) {
    if (controls_[0] != nullptr) controls_[0]->drip_stop.store(stop ? 1 : 0, std::memory_order_release);
  }
  bool Freeze(v1::Phase phase);
  // before_continue: see CandidateProcesses::Thaw.
  bool Thaw(const std::function<void()>& before_continue = nullptr);
  // `cmd` to the still-stopped candidate ranks, then Thaw; *t_send: when it
  // was sent (the start of the candidate's clock).
  bool CommandThenThaw(const Cmd& cmd, int64_t* t_send);

  // Teardown: waits (bounded) until every candidate rank has exited and
  // reaps it.
  void AwaitCandidateExit();
  void KillAndReapAll();

  const std::vector<RankProc*>& refs() const { return refs_; }
  const std::vector<RankProc*>& cands() const { return cands_; }
  // Every candidate process (ranks and what they started).
  const CandidateProcesses& candidate_tree() const { return tree_; }
  int frozen_windows() const { return frozen_windows_; }
  int window_violations() const { return window_violations_; }
  const std::string& window_detail() const { return window_detail_; }

 private:
  struct Segments;
  bool Cuda() const { return o_.backend == "cuda"; }
  // The kernel's count of OOM kills (rank_pool.cc); -1 when unknown.
  static int64_t OomKillCount();
  // Spawn's steps: the shared segments of both sides, then one rank process
  // (procs_[i]: reference ranks first).
  bool CreateSegments(const DataLayout& layout, uint64_t scratch_bytes, Segments* seg);
  bool StartRank(int i, int self, const std::string& rank_exe, const Dims& dims,
                 const DataLayout& layout, uint64_t scratch_bytes, const Segments& seg,
                 const std::vector<int>& cpus, const std::vector<char*>& envp);
  void Crash(RankProc* p, v1::Phase phase);
  void Timeout(const std::vector<RankProc*>& stuck, v1::Phase phase);

  const LaunchOptions& o_;
  Outcome* out_;
  int64_t deadline_ns_ = 0;
  double phase_limit_s_ = 0;  // what deadline_ns_ allowed when set, for messages
  std::vector<RankProc> procs_;
  std::vector<RankProc*> refs_, cands_;
  int pgid_ = 0;
  SideControl* controls_[2] = {nullptr, nullptr};  // [0] ref, [1] cand
  CandidateProcesses tree_;
  CandidateProcesses ref_tree_;  // the reference ranks, stopped the same way to end their clock
  int frozen_windows_ = 0;
  int64_t last_reply_ns_ = 0;
  int64_t last_reply_at_ns_ = 0;
  std::vector<double> ref_start_ns_;  // RefStartMedianNs's samples
  // PrintRoundDiag's tallies, by op + (candidate side ? kOpSlots : 0).
  static constexpr int kOpSlots = 32;
  int64_t op_sent_ns_[2 * kOpSlots] = {};
  int64_t op_ns_[2 * kOpSlots] = {};
  int64_t op_rounds_[2 * kOpSlots] = {};
  int64_t oom_kills0_ = -1;  // the kernel's OOM kill count when the ranks started
  int window_violations_ = 0;
  std::string window_detail_;
  std::vector<int> watcher_cpus_;  // WatcherCpus, cuda only
};

}  // namespace pkforge::kernels
