// Keeping candidate processes away from the trusted ones, and under control.
//
// The threat model (docs/threat-model.md) lets candidate code do anything in
// its own processes and assumes its author has read this file. Three pieces:
//
//   MakeNonDumpable()         trusted processes (the judge, reference ranks)
//                             call it before they hold anything secret: their
//                             /proc/<pid>/{fd,environ,mem,maps,map_files} and
//                             ptrace then need CAP_SYS_PTRACE, which no
//                             candidate process has.
//   HardenCandidateProcess()  a candidate rank calls it before it loads the
//                             candidate: no_new_privs, every capability dropped
//                             (also when the judge runs as root outside any
//                             sandbox, so an exec cannot regain them), and a
//                             seccomp filter, inherited by every thread and
//                             process the candidate starts, that lets signals
//                             reach only the calling process, denies SIGIO
//                             ownership (F_SETOWN/F_SETSIG), ptrace and the
//                             process_vm/pidfd_getfd family, namespaces, and
//                             turns scheduling/priority/rlimit changes aimed
//                             at other processes into no-ops; no secret
//                             memory (memfd_secret), and no core dump
//                             (RLIMIT_CORE fixed at 1, which keeps even a pipe
//                             core_pattern's helper from starting).
//   CandidateProcesses        the judge's view of every candidate process: the
//                             rank processes, everything they started at any
//                             depth (found through /proc/<pid>/task/<tid>/
//                             children), and orphans re-parented to the judge
//                             (a child subreaper). It stops them all (SIGSTOP,
//                             which cannot be caught, repeated until every
//                             thread is stopped), verifies on thaw that no
//                             thread ran and nothing new appeared meanwhile
//                             (per-thread CPU time from schedstat: catches a
//                             process continued by a timer or another
//                             escape), counts extra processes, and kills the
//                             whole tree, stopping it first so nothing can
//                             fork its way out.
//
// Implemented in containment.cc (MakeNonDumpable, the hardening, the seccomp
// filters) and candidate_processes.cc (CandidateProcesses and the per-thread
// /proc readers below it).
//
// Thread safety: CandidateProcesses is used by the judge's single thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace pkforge::kernels {

absl::Status MakeNonDumpable();
// drop_root: when running as uid 0 (a judge started by root outside any
// sandbox), also become an unprivileged uid/gid (65534) first, so that files
// owned by root (cgroup controls, the operator's files) are not writable by
// the candidate even without capabilities. Skipped where no such uid is
// mapped (inside the sandbox's user namespace there is nothing to gain).
// confine_writes: this process and anything it starts may write only
// beneath the folders in `writable` and to /dev/null, /dev/zero, /dev/full
// (Landlock, where the kernel has it: every right to write, truncate,
// create, remove, rename or link a file is handled): nothing under /proc,
// so the oom_score_adj of 1000 set here stays, and nothing another
// evaluation will run or read (a launch by a plain user keeps that user's
// uid: red team round 15 r15_judge_binary_write replaced the worker binary).
// Off for cuda ranks: libcuda names its threads through
// /proc/self/task/<tid>/comm and fails to initialize when it cannot
// (cudaErrorOperatingSystem, seen on the H200); a rule for task/ would also
// open task/<tid>/oom_score_adj. There the executor's sandbox (read-only
// but for private tmpfs) and memory cgroup are the defence
// (docs/threat-model.md).
// forbid_timers: no timerfd, POSIX timer, interval timer (setitimer,
// alarm), io_uring or AIO context, and no socket but AF_UNIX (TCP's pacing
// and retransmit timers): kernel timers that fire while the candidate is
// stopped, on the reference's CPU. Off for cuda ranks until verified on a
// GPU that libcuda and NCCL need none of them (NCCL's bootstrap uses TCP
// sockets; docs/threat-model.md row 25).
// forbid_processes: a thread that starts a process (fork, vfork, clone
// without CLONE_THREAD; clone3 is ENOSYS, so glibc falls back to clone)
// gets the whole process killed with SIGSYS, which the judge reports as
// CHEAT_DETECTED outlived_call (RankPool::Crash); threads stay allowed. In
// the base filter, loaded before the candidate's library: a rule loaded
// later could be faked by a filter the candidate installed first (red team
// round 8 seccomp_neuter_forkban). A process alive after a call was already
// CHEAT_DETECTED; one reaped inside a call ran beside its rank in no count
// of the candidate's CPU time (round 8 drip_starve_child_k16). Off for cuda
// ranks until a GPU run shows libcuda and NCCL start no process.
absl::Status HardenCandidateProcess(bool drop_root = false, bool confine_writes = true,
                                    bool forbid_timers = true, bool forbid_processes = true,
                                    const std::vector<std::string>& writable = {});

// HardenCandidateProcess's seccomp filter alone (no_new_privs, then the
// filter; no uid, capability, Landlock or OOM change): a cuda reference rank
// loads it too, at the same point of its start-up, so that every system call
// costs both sides the same filter run (the candidate's identical code
// otherwise pays it alone; PKFORGE_REF_FILTER=0 leaves the reference
// unfiltered, for measuring that cost).
absl::Status LoadCandidateSeccompFilter(bool confine_writes, bool forbid_timers,
                                        bool forbid_processes);

// cuda candidate ranks, after the harness's own CUDA and NCCL set-up
// (kOpInit) and before the candidate's library is loaded: the rules
// HardenCandidateProcess leaves out for them (forbid_timers with its socket
// rule, forbid_processes) in a second filter. Loaded before any candidate
// code ran, so nothing can have stacked a filter that fakes it (round 8
// seccomp_neuter_forkban faked one loaded after candidate code). Off until a
// GPU run shows that libcuda and NCCL need none of them after set-up:
// PKFORGE_CUDA_LATE_FILTER=1 turns it on (kernels/cuda/rank_cuda.cc).
absl::Status LoadLateCandidateFilter();

class CandidateProcesses {
 public:
  CandidateProcesses() = default;
  // ranks: the candidate rank processes (children of this process);
  // trusted: other children of this process that are not candidate code
  // (the reference ranks).
  // adopt_orphans: also count our other children (orphans a candidate
  // double-forked, re-parented to us) as members; false for a set of trusted
  // processes that is stopped only to end a clock (the scan still runs, its
  // result unused, so both sides' stops cost the same).
  CandidateProcesses(std::vector<int> ranks, std::vector<int> trusted, bool adopt_orphans = true)
      : ranks_(std::move(ranks)),
        trusted_(trusted.begin(), trusted.end()),
        adopt_orphans_(adopt_orphans) {}

  // Every live (non-zombie) candidate process.
  std::vector<int> List() const;

  // Stops every candidate process and waits until each of its threads is
  // stopped, then records each thread's CPU time. Error when that does not
  // happen before deadline_ns (MonotonicNs clock).
  absl::Status Freeze(int64_t deadline_ns);
  // Checks that nothing ran or appeared since Freeze() and continues every
  // process. Returns an empty string when the freeze held, else what broke it.
  // `before_continue`, when the freeze held, runs after the checks and before
  // the first SIGCONT (the judge sends its command there, so the candidate
  // wakes once to a command already waiting, and no moment passes between
  // its thaw and the start of its clock).
  std::string Thaw(const std::function<void()>& before_continue = nullptr);
  bool frozen() const { return frozen_; }
  // MonotonicNs() at which the last Freeze() saw every thread stopped (before
  // it read CPU times): the end of anything the candidate could still do.
  int64_t stopped_at_ns() const { return stopped_at_ns_; }
  // When the last Freeze sent its first SIGSTOP (the candidate made
  // progress until about then; stopped_at_ns() is when the stop was verified).
  int64_t stop_sent_at_ns() const { return stop_sent_at_ns_; }

  // Live candidate processes other than the rank processes themselves
  // (pids and a description into *detail when non-null).
  std::vector<int> Extra(std::string* detail) const;

  // Stops and SIGKILLs every candidate process and reaps those that are our
  // children, until none is left or deadline_ns passes. Returns how many
  // processes were killed (excluding the ranks, which the caller reaps).
  int KillAll(int64_t deadline_ns);

 private:
  std::vector<int> ranks_;
  std::set<int> trusted_;
  bool adopt_orphans_ = true;
  bool frozen_ = false;
  int64_t stopped_at_ns_ = 0;
  int64_t stop_sent_at_ns_ = 0;
  std::set<int> frozen_pids_;
  std::string continued_;  // set by Freeze() when a stopped process ran again
  std::map<int, uint64_t> cpu_ns_;  // tid -> CPU time when frozen
};

// Per-thread helpers (exposed for tests).
// State letter of a thread ('R', 'S', 'D', 'T', 't', 'Z', ...); 0 if gone.
char ThreadState(int pid, int tid);
// CPU time of a thread in ns (schedstat, or stat's utime+stime); -1 if gone.
int64_t ThreadCpuNs(int pid, int tid);
// Whether a thread of a stopped process sleeps in a system call with no
// timeout, waiting for something else to wake it (/proc/.../syscall: a
// futex wait without a timeout, pause, rt_sigsuspend, a blocking read, poll
// or epoll_wait with an infinite timeout). False for a timed sleep
// (nanosleep, a futex or poll with a timeout: work due later), a thread
// stopped in user space or running, and one gone.
bool ThreadWaitsIndefinitely(int pid, int tid);
// CPU time of a whole process, threads that already exited included (its
// CPU-time clock, ns; /proc/<pid>/stat's ticks where that is refused); -1 if
// gone.
int64_t ProcessCpuNs(int pid);
std::vector<int> ThreadIds(int pid);
// Time the threads of a process spent runnable but waiting for a CPU, in ns
// (schedstat's run_delay, summed over its threads); -1 when unavailable.
int64_t ProcessRunDelayNs(int pid);
// The same for the process's main thread only (/proc/<pid>/schedstat); -1
// when unreadable.
int64_t MainThreadRunDelayNs(int pid);

}  // namespace pkforge::kernels
