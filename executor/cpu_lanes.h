// CpuLanes: which CPUs each concurrent run of an executor may use.
//
// An executor runs one cuda evaluation per GPU at once, host evaluations in
// their slots, and compiles beside them. Each judge pins its rank processes
// to CPUs of its own allowed set (kernels/harness/rank_pool.cc), so without
// a partition every concurrent evaluation pinned its rank 0 to the same CPU:
// their timed batches shared it, and one candidate's calls (its threads
// pinned there too) ran on the CPU another evaluation's reference was timed
// on. The lanes are disjoint: one per GPU of the pool, and one for
// everything else (host evaluations, compiles, probes without a GPU), and a
// run gets the union of its GPUs' lanes (SandboxPolicy::cpus). Candidate
// ranks cannot widen their set (seccomp: sched_setaffinity is a no-op).
//
// The split is contiguous in the order of the executor's own CPU list (CPUs
// numbered by core and NUMA node stay together), GPU lanes first, each with
// an equal share; the shared lane takes the rest, at least one share. With
// fewer CPUs than lanes nothing is partitioned (every lane is every CPU).
//
// Thread safety: immutable after construction; any thread.
#pragma once

#include <map>
#include <vector>

namespace pkforge::executor {

class CpuLanes {
 public:
  // `cpus`: the executor's allowed CPUs (sched_getaffinity), `gpus`: the
  // pool's GPU indices. Empty cpus: no lanes (runs keep the executor's set).
  CpuLanes(const std::vector<int>& cpus, const std::vector<int>& gpus);

  // The CPUs of a run on `gpus` (empty: the shared lane); empty when
  // nothing is partitioned or a GPU is unknown.
  std::vector<int> For(const std::vector<int>& gpus) const;
  const std::vector<int>& shared() const { return shared_; }

  // The executor's own allowed CPUs, ascending (sched_getaffinity).
  static std::vector<int> Allowed();

 private:
  std::map<int, std::vector<int>> gpu_;
  std::vector<int> shared_;
};

}  // namespace pkforge::executor
