// The cuda rank's drip batches (protocol.h kOpDrip, kOpDripWatch; the check
// that judges them: kernels/harness/drip_check.h). Members of CudaRank
// (rank_cuda.h).
//
// What differs from the host rank's (rank.cc): the watcher never runs a
// kernel. At each return it copies the call's outputs into a snapshot
// (drip_snap_) and the next call's inputs into place, both with
// cudaMemcpyAsync on its own stream, then waits for them; the snapshots are
// compared with the expected outputs after the batch. A kernel of the
// reference's context between two of the candidate's calls would cost the
// candidate's drip a context switch per call that the reference's own drip
// (one context) never pays; copies leave the compute engine to the calls.
// The reference's own drip batch has the same watcher, as a thread of its
// process (same CPU, same stream operations), so the two hand-offs cost
// alike. The drip words live in host memory: the candidate side's mailbox
// (after the IPC handles; armed by reference rank r, written by candidate
// rank r and its watcher) and, for the reference's own drip, self_drip_.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "kernels/cuda/device_ops.h"
#include "kernels/cuda/rank_cuda.h"
#include "kernels/harness/drip_hand_off.h"
#include "kernels/harness/protocol.h"
#include "kernels/harness/rng.h"
#include "kernels/harness/shm.h"

namespace pkforge::kernels::cuda {
namespace {
// PKFORGE_CUDA_DRIP=0: no drip batches on cuda (measurements; the same
// environment reaches the judge and every rank).
bool CudaDripOn() {
  static const bool on = [] {
    const char* v = std::getenv("PKFORGE_CUDA_DRIP");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return on;
}

// Keeps the first CUDA error of a sequence.
void Note(cudaError_t* first, cudaError_t e) {
  if (*first == cudaSuccess) *first = e;
}
}  // namespace

// In the reference rank's set-up, before any candidate code runs: the
// buffers for drip batches of up to CudaDripCalls calls, the watcher's
// stream and the reference's own watcher thread (none when the problem's
// size allows no drip batch).
bool CudaRank::AllocateDrip(Reply* rep) {
  if (!ref_ || !CudaDripOn()) return true;
  const uint32_t cap = CudaDripCalls(in_bytes_, out_bytes_);
  if (cap == 0) return true;
  if (Failed(rep, cudaMalloc(&drip_snap_, static_cast<size_t>(SnapshotStride()) * cap),
             "drip snapshots") ||
      Failed(rep, cudaMalloc(&drip_stash_, static_cast<size_t>(std::max<int64_t>(in_bytes_, 256)) * cap),
             "drip inputs") ||
      Failed(rep, cudaStreamCreateWithFlags(&watch_stream_, cudaStreamNonBlocking), "drip stream"))
    return false;
  drip_watcher_ = std::make_unique<ParkedThread>();
  drip_cap_ = cap;
  return true;
}

DripWord* CudaRank::CandDripWord() const {
  char* mailbox = ref_ ? peer_mailbox_ : mailbox_;
  return reinterpret_cast<DripWord*>(mailbox + kCudaMailboxDripOffset + o_.rank * kDripWordBytes);
}

void CudaRank::ArmCandidateDrip() { ArmDrip(CandDripWord()); }

cudaError_t CudaRank::DecoyInputs(char* base, int slot, uint64_t seed, cudaStream_t stream) {
  for (size_t i = 0; i < in_.size(); ++i) {
    const Placed& p = in_[i];
    const uint64_t key =
        StreamKey(seed, p.desc.replicated ? kReplicatedRank : o_.rank, static_cast<uint32_t>(i));
    const cudaError_t e =
        GenerateInput(At(base, slot, p), p.dtype, key, p.numel, stream, p.desc.lo, p.desc.hi);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// Call k's outputs at `base` into drip snapshot k.
cudaError_t CudaRank::SnapOutputsAt(const char* base, int slot, uint32_t k, cudaStream_t stream) {
  int64_t off = static_cast<int64_t>(k) * SnapshotStride();
  for (const Placed& p : out_) {
    const cudaError_t e =
        cudaMemcpyAsync(drip_snap_ + off, At(const_cast<char*>(base), slot, p), p.bytes,
                        cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) return e;
    off += p.bytes;
  }
  return cudaSuccess;
}

// The calls of a drip batch on this rank's own buffers (both sides): each
// call, then a device-wide synchronize (work left on any stream is part of
// the call), then the return is marked.
void CudaRank::DripCalls(const Cmd& cmd, DripWord* w, Reply* rep) {
  std::vector<std::vector<pkf_tensor>> ins(cmd.count), outs(cmd.count);
  for (uint32_t k = 0; k < cmd.count; ++k) Tensors(data_, cmd.SlotAt(k), &ins[k], &outs[k]);
  SideBarrierWait(control_, o_.rank, o_.world);
  cudaError_t err = cudaSuccess;
  RunDripCalls(cmd.count, w, [&](uint32_t k) {
    control_->in_run[o_.rank].store(1);
    nvtxRangePushA(RangeName());
    int rc = run_(&ctx_, ins[k].data(), static_cast<int32_t>(ins[k].size()), outs[k].data(),
                  static_cast<int32_t>(outs[k].size()), stream_);
    nvtxRangePop();
    if (rc == 0) {
      err = cudaDeviceSynchronize();
      if (err != cudaSuccess) rc = -10;
    }
    control_->in_run[o_.rank].store(0);
    return rc;
  }, rep);
  if (err != cudaSuccess) Failed(rep, err, "a call of a drip batch");
}

// Snapshots 0..seen-1 against the expected outputs: `golden` (packed as
// the snapshots) or, null, this rank's own slots of the batch. Sets
// d->matched and d->first_bad.
bool CudaRank::JudgeDripSnapshots(const Cmd& cmd, uint32_t seen, const char* golden, DripWatch* d,
                                  Reply* rep) {
  d->matched = 0;
  d->first_bad = -1;
  if (seen == 0) return true;
  const int64_t stride = SnapshotStride();
  const int64_t n = static_cast<int64_t>(seen) * static_cast<int64_t>(out_.size());
  if (Failed(rep, EnsureRecords(&records_, n), "drip check") ||
      Failed(rep, ResetRecords(records_, n, stream_), "drip check"))
    return false;
  unsigned long long* rec = records_.words;
  for (uint32_t k = 0; k < seen; ++k) {
    const int slot = static_cast<int>(cmd.SlotAt(k));
    int64_t off = static_cast<int64_t>(k) * stride;
    for (const Placed& p : out_) {
      const char* expected = golden != nullptr ? golden + off : At(data_, slot, p);
      if (Failed(rep, LaunchCompare(drip_snap_ + off, expected, p.dtype, p.numel, tol_.atol,
                                    tol_.rtol, PoisonBits(p.dtype), rec, stream_),
                 "drip check"))
        return false;
      off += p.bytes;
      rec += kScratchWords;
    }
  }
  if (Failed(rep, FinishRecords(records_, n, stream_), "drip check")) return false;
  const unsigned long long* h = records_.host;
  for (uint32_t k = 0; k < seen; ++k) {
    bool ok = true;
    for (size_t o = 0; o < out_.size(); ++o, h += kScratchWords) ok = ok && h[0] == 0;
    if (ok)
      ++d->matched;
    else if (d->first_bad < 0)
      d->first_bad = k;
  }
  return true;
}

// The reference's own drip batch, the baseline of batch_drip: its outputs
// of the batch (computed by its free-running batch just before) kept as
// the golden ones, its inputs of calls kDripLead.. stashed and replaced by
// decoys, its outputs poisoned; then its calls on this thread, watched by
// drip_watcher_ with the same copies the candidate's watcher makes.
void CudaRank::SelfDrip(const Cmd& cmd, Reply* rep) {
  const uint32_t n = cmd.count;
  if (drip_watcher_ == nullptr || n > drip_cap_) {
    rep->rc = kRcHarness;
    snprintf(rep->message, sizeof rep->message,
             "drip batch of %u calls, the reference buffers %u", n, drip_cap_);
    return;
  }
  const int64_t stride = SnapshotStride();
  const int64_t in_stride = std::max<int64_t>(in_bytes_, 256);
  cudaError_t err = cudaSuccess;
  for (uint32_t k = 0; k < n; ++k) {
    const int slot = static_cast<int>(cmd.SlotAt(k));
    int64_t off = static_cast<int64_t>(k) * stride;
    for (const Placed& p : out_) {
      Note(&err, cudaMemcpyAsync(snapshot_ + off, At(data_, slot, p), p.bytes,
                                 cudaMemcpyDeviceToDevice, stream_));
      off += p.bytes;
    }
    if (k < kDripLead) continue;
    off = static_cast<int64_t>(k - kDripLead) * in_stride;
    for (const Placed& p : in_) {
      Note(&err, cudaMemcpyAsync(drip_stash_ + off, At(data_, slot, p), p.bytes,
                                 cudaMemcpyDeviceToDevice, stream_));
      off += p.bytes;
    }
    Note(&err, DecoyInputs(data_, slot, BatchSeed(cmd.seed ^ kDripDecoySalt, k), stream_));
  }
  for (uint32_t k = 0; k < n && err == cudaSuccess; ++k)
    Note(&err, PoisonOutputs(data_, static_cast<int>(cmd.SlotAt(k))));
  Note(&err, cudaStreamSynchronize(stream_));
  if (Failed(rep, err, "the reference's drip batch set-up")) {
    rep->rc = kRcHarness;
    return;
  }
  ArmDrip(&self_drip_);
  DripWatch d;
  uint32_t seen = 0;
  cudaError_t watch_err = cudaSuccess;
  const int device = o_.rank;
  drip_watcher_->Run([&] {
    Note(&watch_err, cudaSetDevice(device));
    d = WatchDrip(
        &self_drip_, n, static_cast<int64_t>(cmd.seed), nullptr,
        [&](uint32_t k) {
          seen = k + 1;
          Note(&watch_err, SnapOutputsAt(data_, static_cast<int>(cmd.SlotAt(k)), k, watch_stream_));
          return true;
        },
        [&](uint32_t k) {
          const int slot = static_cast<int>(cmd.SlotAt(k));
          const char* src = drip_stash_ + static_cast<int64_t>(k - kDripLead) * in_stride;
          for (const Placed& p : in_) {
            Note(&watch_err, cudaMemcpyAsync(At(data_, slot, p), src, p.bytes,
                                             cudaMemcpyDeviceToDevice, watch_stream_));
            src += p.bytes;
          }
          Note(&watch_err, cudaStreamSynchronize(watch_stream_));
        });
    Note(&watch_err, cudaStreamSynchronize(watch_stream_));
  });
  Reply calls;
  std::memset(&calls, 0, sizeof calls);
  DripCalls(cmd, &self_drip_, &calls);
  drip_watcher_->Wait();
  if (watch_err != cudaSuccess || calls.rc != 0 || d.stopped) {
    rep->rc = kRcHarness;
    snprintf(rep->message, sizeof rep->message, "the reference's drip batch failed: %.200s",
             calls.rc != 0         ? calls.message
             : watch_err != cudaSuccess ? cudaGetErrorString(watch_err)
                                        : "its watcher stopped");
    return;
  }
  if (!JudgeDripSnapshots(cmd, seen, snapshot_, &d, rep)) {
    rep->rc = kRcHarness;
    return;
  }
  FillDripReply(d, rep);
}

// The candidate's drip batch, watched on this thread: at each return its
// outputs are copied into a snapshot and the next call's inputs copied in
// from this rank's (the reference's) slot; the snapshots are compared with
// this rank's outputs after the batch.
void CudaRank::WatchCandidateDrip(const Cmd& cmd, Reply* rep) {
  const uint32_t n = cmd.count;
  if (!EnsureCandData(rep)) return;
  if (watch_stream_ == nullptr || n > drip_cap_) {
    rep->rc = kRcHarness;
    snprintf(rep->message, sizeof rep->message,
             "drip batch of %u calls, the reference buffers %u", n, drip_cap_);
    return;
  }
  uint32_t seen = 0;
  cudaError_t err = cudaSuccess;
  DripWatch d = WatchDrip(
      CandDripWord(), n, static_cast<int64_t>(cmd.seed), &control_->drip_stop,
      [&](uint32_t k) {
        seen = k + 1;
        Note(&err, SnapOutputsAt(cand_data_, static_cast<int>(cmd.SlotAt(k)), k, watch_stream_));
        return true;
      },
      [&](uint32_t k) {
        const int slot = static_cast<int>(cmd.SlotAt(k));
        for (const Placed& p : in_)
          Note(&err, cudaMemcpyAsync(At(cand_data_, slot, p), At(data_, slot, p), p.bytes,
                                     cudaMemcpyDeviceToDevice, watch_stream_));
        Note(&err, cudaStreamSynchronize(watch_stream_));
      });
  Note(&err, cudaStreamSynchronize(watch_stream_));
  if (Failed(rep, err, "watching the candidate's drip batch")) return;
  if (!JudgeDripSnapshots(cmd, seen, nullptr, &d, rep)) return;
  FillDripReply(d, rep);
}

}  // namespace pkforge::kernels::cuda
