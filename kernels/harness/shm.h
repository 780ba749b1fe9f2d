// Shared memory, the per-side control block and the host barrier.
//
// Every segment is a memfd created by the judge (named "pkf-<side>-<what>" so
// /proc/<pid>/maps shows which process maps what; the judge checks that no
// candidate process maps a "pkf-ref-" segment) and handed to rank processes
// as inherited descriptors at fixed numbers (kFd*).
//
// Thread safety: SideControl is shared between processes and accessed only
// through std::atomic (lock-free, address-free for 32/64-bit on x86-64 and
// aarch64). The barrier is safe from any thread of the rank processes.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "pkforge/candidate.h"

namespace pkforge::kernels {

inline constexpr int kMaxWorld = 64;

// Fixed descriptor numbers in rank processes.
inline constexpr int kFdCmd = 3;        // judge -> rank commands
inline constexpr int kFdReply = 4;      // rank -> judge replies
inline constexpr int kFdControl = 5;    // this side's SideControl
inline constexpr int kFdScratch = 6;    // this side's symmetric scratch + flags
inline constexpr int kFdData = 7;       // this side's inputs/outputs
inline constexpr int kFdPeerData = 8;   // reference ranks only: the candidate side's data

// One per side (reference side, candidate side), shared by that side's ranks
// and the judge. Written by rank processes, so for the candidate side its
// contents are diagnostics only (used for deadlock attribution), never trusted.
struct SideControl {
  std::atomic<uint32_t> barrier_count;
  std::atomic<uint32_t> barrier_generation;
  uint32_t world;
  uint32_t pad;
  std::atomic<uint32_t> in_barrier[kMaxWorld];    // 1 while rank waits in the barrier
  std::atomic<uint32_t> in_run[kMaxWorld];        // 1 while rank is inside pkf_run/pkf_setup
  std::atomic<uint64_t> barrier_calls[kMaxWorld];
  // cuda backend only (kernels/cuda/rank_cuda.cc): written by ranks of this
  // side during kOpSetup, read by the side's other ranks after a barrier.
  uint8_t nccl_id[128];                // ncclUniqueId drawn by rank 0 of the side
  uint8_t ipc_scratch[kMaxWorld][64];  // cudaIpcMemHandle_t of each rank's scratch + signal pad
  // Reference side only (host drip batches): set by the judge once the
  // candidate's drip round is over (its ranks replied and are frozen). A
  // watcher still waiting for a call's return then stops: none can come
  // (red team round 7 drip_forged_reply_blame: replies written by candidate
  // code mid-call left the watchers waiting into a HARNESS_ERROR).
  std::atomic<uint32_t> drip_stop;
};

// cuda backend: the data segments hold only a mailbox of cudaIpcMemHandle_t,
// one per rank, for the candidate ranks' device allocation of inputs and
// outputs (the reference rank r maps kFdPeerData and opens handle r).
// After the handles, one drip word per rank (protocol.h DripWord): the
// candidate side's are armed by reference rank r and written by both; then
// each rank's drip staging memory (CudaDripStageBytes each, from
// kCudaMailboxStageOffset: page-aligned).
inline constexpr uint64_t kCudaMailboxDripOffset = kMaxWorld * 64;
inline constexpr uint64_t kCudaMailboxStageOffset = kCudaMailboxDripOffset + kMaxWorld * 64;
inline constexpr uint64_t CudaMailboxBytes(int world, int64_t stage_bytes) {
  return kCudaMailboxStageOffset + static_cast<uint64_t>(world) * static_cast<uint64_t>(stage_bytes);
}

// Creates an anonymous memfd of `bytes` (zero-filled), close-on-exec.
absl::StatusOr<int> CreateSegment(const std::string& name, uint64_t bytes);
// Maps `bytes` of fd read-write, shared. The mapping outlives the fd.
absl::StatusOr<void*> MapSegment(int fd, uint64_t bytes);

// Barrier across the ranks of one side. Spins briefly, then sleeps on a
// futex, so idle ranks never steal the CPU of working ones (16+ processes
// share 2 cores in CI). Never times out: the judge's phase deadline bounds it.
void SideBarrierWait(SideControl* control, int rank, int world);

// Drip hand-offs (protocol.h DripWord): sleeps while *word == value, at
// most timeout_ns (futex, shared between processes; returns early on any
// change or wake-up); wakes every waiter on *word.
void WaitWhileEquals(std::atomic<uint32_t>* word, uint32_t value, int64_t timeout_ns);
void WakeAll(std::atomic<uint32_t>* word);

int64_t MonotonicNs();
// Number of threads of `pid` (entries of /proc/<pid>/task), -1 on error.
int CountThreads(int pid);

}  // namespace pkforge::kernels
