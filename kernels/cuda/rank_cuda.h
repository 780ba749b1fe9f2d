// The trusted rank process of the cuda backend (pkforge-cuda-rank): the class
// CudaRank. Private to that binary: rank_cuda.cc has the command loop,
// set-up, generation and timed calls (and main), rank_cuda_checks.cc the
// verification commands that compare the candidate's buffers on the device,
// rank_cuda_drip.cc the drip batches (kOpDrip, kOpDripWatch).
// What the process is and does: the comment at the top of rank_cuda.cc.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/device_ops.h"
#include "kernels/harness/drip_hand_off.h"
#include "kernels/harness/problem.h"
#include "kernels/harness/protocol.h"
#include "kernels/harness/rank.h"
#include "kernels/harness/shm.h"
#include "pkforge/candidate.h"

namespace pkforge::kernels::cuda {

// Sets rep->rc/message from a CUDA or NCCL error; returns true when failed.
inline bool Failed(Reply* rep, cudaError_t e, const char* what) {
  if (e == cudaSuccess) return false;
  rep->rc = -10;
  snprintf(rep->message, sizeof rep->message, "CUDA error in %s: %s (%s)", what,
           cudaGetErrorName(e), cudaGetErrorString(e));
  return true;
}
inline bool Failed(Reply* rep, ncclResult_t e, const char* what) {
  if (e == ncclSuccess) return false;
  rep->rc = -11;
  snprintf(rep->message, sizeof rep->message, "NCCL error in %s: %s", what, ncclGetErrorString(e));
  return true;
}

// PKFORGE_DRIP_WAITS (rank_cuda_drip.cc), read once: 3 (default), 2, 1, or
// 0 (the batch queued on the GPU: stream waits and writes on the drip word).
int DripWaits();

class CudaRank {
 public:
  explicit CudaRank(const RankOptions& o) : o_(o) {}

  int Main();

 private:
  int Fail(const std::string& why);

  // The NVTX range around each call: the profiler keeps the candidate's.
  const char* RangeName() const { return ref_ ? "pkforge_reference" : "pkforge_candidate"; }

  char* Base() const { return data_; }
  // The candidate's buffers: mapped by IPC in the reference rank.
  char* CandBase() const { return ref_ ? cand_data_ : data_; }

  // Commands and their set-up (rank_cuda.cc).
  void Init(Reply* rep);
  void Setup(Reply* rep);
  bool EnsureCandData(Reply* rep);
  cudaError_t PoisonOutputs(char* base, int slot);
  void Gen(int slot, uint64_t seed, bool candidate_too, bool finish, Reply* rep,
           uint64_t decoy_seed = 0);
  void Tensors(char* base, int slot, std::vector<pkf_tensor>* in, std::vector<pkf_tensor>* out);
  void Run(int slot, Reply* rep);
  void Batch(const Cmd& cmd, Reply* rep);
  bool CreateSwitchContext(Reply* rep);
  void SwitchContext(Reply* rep);
  bool LoadDriver(Reply* rep);
  void Idle(const Cmd& cmd, Reply* rep);

  // Drip batches (rank_cuda_drip.cc; protocol.h kOpDrip, CudaDripCalls).
  void StartDripWatcher();
  void AllocateDrip();
  void AllocateQueuedDrip();
  DripWait WatchMode() const;
  DripWord* CandDripWord() const;
  // This rank's drip word in its own side's mailbox: the candidate's calls
  // side, or the reference's own drip batch (the reference side's mailbox
  // is no candidate's).
  DripWord* OwnDripWord() const;
  // Rank o_.rank's staging memory in a side's mailbox: inputs, then outputs.
  char* Stage(char* mailbox) const {
    return mailbox + kCudaMailboxStageOffset + static_cast<int64_t>(o_.rank) * stage_bytes_;
  }
  cudaError_t DecoyInputs(char* base, int slot, uint64_t seed, cudaStream_t stream);
  void DripCalls(const Cmd& cmd, DripWord* w, char* stage, Reply* rep,
                 std::vector<int64_t>* call_ns = nullptr);
  void DripCallsQueued(const Cmd& cmd, DripWord* w, char* stage, Reply* rep,
                       std::vector<int64_t>* call_ns);
  bool Queued() const { return drip_word_dev_ != 0; }
  bool StagedOutputsMatch(const char* stage, uint32_t k) const;
  void StageInputs(char* stage, uint32_t k) const;
  void SelfDrip(const Cmd& cmd, Reply* rep);
  void WatchCandidateDrip(const Cmd& cmd, Reply* rep);

  // Verification commands and their snapshot memory (rank_cuda_checks.cc).
  cudaError_t EnsureSnapshot(uint32_t count);
  // Bytes between two calls' snapshots (this rank's outputs, at least 256).
  int64_t SnapshotStride() const { return std::max<int64_t>(out_bytes_, 256); }
  bool BeginCheck(const Cmd& cmd, Reply* rep);
  void Check(const Cmd& cmd, Reply* rep);
  // Check with one synchronization for the whole batch (the default;
  // PKFORGE_BATCH_CHECK=0: Check waits once per call and tensor).
  void CheckBatched(const Cmd& cmd, Reply* rep);
  bool CompareLiveBatch(const Cmd& cmd, Reply* rep, const char* what);
  void NotPoison(const Cmd& cmd, Reply* rep);
  void CallsDone(const Cmd& cmd, Reply* rep);
  void Digest(int slot, Reply* rep);
  void Snapshot(const Cmd& cmd, Reply* rep);
  void SnapCompare(int slot, Reply* rep);

  char* At(char* base, int slot, const Placed& p) const {
    return base + static_cast<int64_t>(slot) * slot_bytes_ + p.offset;
  }

  RankOptions o_;
  SideControl* control_ = nullptr;  // this side's control block (shm.h)
  bool ref_ = false;
  bool ready_ = false;
  bool inited_ = false;
  const Problem* problem_ = nullptr;
  pkf_dtype dtype_ = PKF_F32;
  Dims dims_;
  Tolerance tol_;
  std::vector<Placed> in_, out_;
  int64_t slot_bytes_ = 0;
  int64_t out_bytes_ = 0;
  char* mailbox_ = nullptr;
  char* peer_mailbox_ = nullptr;
  char* data_ = nullptr;       // device: this rank's inputs/outputs, all slots
  char* cand_data_ = nullptr;  // ref: the candidate rank's allocation (IPC)
  char* snapshot_ = nullptr;   // ref: device copies of candidate outputs, one per call of a batch
  int64_t snapshot_bytes_ = 0;
  CUcontext other_ctx_ = nullptr;  // ref: an idle context for SwitchContext
  struct Driver {  // driver entry points (LoadDriver), null until first needed
    decltype(&cuDeviceGet) device_get = nullptr;
    decltype(&cuCtxCreate) ctx_create = nullptr;
    decltype(&cuCtxPushCurrent) ctx_push = nullptr;
    decltype(&cuCtxPopCurrent) ctx_pop = nullptr;
  } drv_;
  void* scratch_mem_ = nullptr;
  char* idle_copy_ = nullptr;  // 64 bytes of device memory: the idle probe's copies
  char* idle_host_ = nullptr;  // 64 bytes of pinned host memory: the same
  cudaEvent_t idle_done_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  DeviceScratch scratch_;
  RecordScratch records_;  // CheckBatched's and CompareLiveBatch's records
  // Drip batches of up to drip_cap_ calls (0: none for this size).
  int64_t in_bytes_ = 0;      // this rank's inputs, all tensors
  int64_t stage_bytes_ = 0;   // each rank's staging memory (CudaDripStageBytes)
  uint32_t drip_cap_ = 0;
  // ref: the batch's expected outputs (packed, out_bytes_ a call) and the
  // inputs of calls kDripLead.. (packed, in_bytes_ a call), host memory,
  // copied from this rank's slots by its own drip batch (SelfDrip) for
  // both watchers; drip_for_ names that batch.
  std::vector<char> drip_golden_, drip_stash_;
  Cmd drip_for_{};
  // The reference's drip watcher: its own drip batch's, and with queued
  // batches the candidate's too; on its own CPU when watcher_pinned_.
  std::unique_ptr<ParkedThread> drip_watcher_;
  bool watcher_pinned_ = false;
  // Queued drip batches (PKFORGE_DRIP_WAITS=0; AllocateDrip): the stream
  // memory operations, OwnDripWord's page mapped for the GPU (0: the
  // batches wait on the CPU), and two timing events a call (its start and
  // end on the GPU: the reference's call alone).
  decltype(&cuStreamWaitValue32) wait_value_ = nullptr;
  decltype(&cuStreamWriteValue32) write_value_ = nullptr;
  CUdeviceptr drip_word_dev_ = 0;
  std::vector<cudaEvent_t> drip_call_ev_;
  // The end of a queued batch, waited for asleep (cudaEventBlockingSync,
  // whatever device flags a candidate sets): the calls' side leaves the
  // pair's CPU to a watcher that has none of its own.
  cudaEvent_t drip_done_ev_ = nullptr;
  // A dripped call's joins with the legacy default stream (DripCalls): the
  // staged inputs' copy done before it, its outputs' copy after it.
  cudaEvent_t drip_in_ev_ = nullptr, drip_legacy_ev_ = nullptr;
  ncclComm_t comm_ = nullptr;
  std::vector<void*> scratch_ptrs_;
  std::vector<uint32_t*> flag_ptrs_;
  pkf_context ctx_{};
  pkf_run_fn run_ = nullptr;
  pkf_teardown_fn teardown_ = nullptr;
};

}  // namespace pkforge::kernels::cuda
