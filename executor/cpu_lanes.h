// CpuLanes: which CPUs each concurrent run of an executor may use.
//
// An executor runs one cuda evaluation per GPU at once, host evaluations in
// their slots, and compiles beside them. Each judge pins its rank processes
// to CPUs of its own allowed set (kernels/harness/rank_pool.cc), so without
// a partition every concurrent evaluation pinned its rank 0 to the same CPU:
// their timed batches shared it, and one candidate's calls (its threads
// pinned there too) ran on the CPU another evaluation's reference was timed
// on. The lanes are disjoint: one per GPU of the pool, and one shared by
// everything else (host evaluations, compiles, probes without a GPU); a run
// gets the union of its GPUs' lanes (SandboxPolicy::cpus). Candidate ranks
// cannot widen their set (seccomp: sched_setaffinity is a no-op).
//
// The split is by physical core (SMT siblings stay in one lane: a sibling in
// another lane would share the core's pipelines with it), each GPU lane
// taking an equal share of cores, from the GPU's own NUMA node where it has
// enough of them (its memory traffic and interrupts are local there), and
// the shared lane the rest, at least one share. With fewer cores than lanes
// nothing is partitioned (every lane is every CPU).
//
// Thread safety: immutable after construction; any thread.
#pragma once

#include <map>
#include <vector>

namespace pkforge::executor {

// What the split needs to know about the host.
struct CpuTopology {
  struct Cpu {
    int id = 0;
    int core = 0;  // CPUs with the same core are SMT siblings
    int node = 0;  // NUMA node
  };
  std::vector<Cpu> cpus;          // the executor's allowed CPUs
  std::map<int, int> gpu_node;    // GPU index -> its NUMA node (absent: unknown)

  // This host: the allowed CPUs (sched_getaffinity), their cores and nodes
  // (/sys/devices/system/cpu, /sys/devices/system/node), each GPU's node
  // (its PCI device's numa_node; GPU i is the i-th address under
  // /proc/driver/nvidia/gpus, as in sandbox/bwrap_args.h). Missing files
  // leave a CPU its own core on node 0, a GPU's node unknown.
  static CpuTopology Probe(const std::vector<int>& gpus);
};

class CpuLanes {
 public:
  CpuLanes() = default;
  // `gpus`: the pool's GPU indices. No GPUs or no CPUs: no lanes (runs keep
  // the executor's set).
  CpuLanes(const CpuTopology& topology, const std::vector<int>& gpus);

  // The CPUs of a run on `gpus` (empty: the shared lane), ascending; empty
  // when nothing is partitioned or a GPU is not in the pool.
  std::vector<int> For(const std::vector<int>& gpus) const;
  const std::vector<int>& shared() const { return shared_; }

 private:
  std::map<int, std::vector<int>> gpu_;
  std::vector<int> shared_;
};

}  // namespace pkforge::executor
