// The cuda rank's drip batches (protocol.h kOpDrip, kOpDripWatch; the check
// that judges them: kernels/harness/drip_check.h). Members of CudaRank
// (rank_cuda.h).
//
// The watcher never touches the GPU. A drip call's inputs reach it through
// host staging memory: the watcher (a reference rank, trusted) writes call
// k + kDripLead's real inputs there once call k's outputs matched, and the
// calls' side copies them into the call's slot right before the call; after
// the call and a device-wide synchronize the calls' side copies the
// outputs back to the staging memory, where the watcher compares them on
// its CPU. Every GPU operation of a drip batch thus runs in the calls'
// own context: work of the reference's context between two of the
// candidate's calls would cost each call two GPU context switches (measured
// on an H100, 2026-12-06, with the watcher copying on the GPU: ~300 us a
// candidate call against ~30 us for the reference's own drip, one context),
// which the reference's own drip never pays. That one has the same calls
// and the same watcher, as a thread of its process, on staging memory of
// the same kind (its own side's mailbox): the two hand-offs cost alike.
//
// What a candidate can do to its side: its staging memory and drip word are
// in its mailbox, writable. Writing the staged outputs itself needs the
// right values (the work done); withholding or forging the copies only
// delays or breaks its own calls. The drip batch's outputs and inputs are
// verified again afterwards on the device (the judge's snapshot and check).
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstddef>
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
#include "kernels/harness/tensor_ops.h"

namespace pkforge::kernels::cuda {
namespace {
int64_t Up256(int64_t v) { return (v + 255) / 256 * 256; }

}  // namespace

// How many times a dripped call's side waits for the GPU. The calls' side
// of the hand-off is harness code in the candidate's process, so whatever it
// spends there a candidate can skip by doing that side itself (red team
// round 28 r28_drip_agent): the fewer operations, the less to skip; but a
// wait right after the call is what shows a call alone's whole latency.
// H100, session 21 (tiny allreduce, world 1; scripts/gpu-session.sh s21a,
// s21b):
//   3 (default): the staged inputs' copy waited for, the call, a
//      device-wide synchronize, the outputs' copy waited for: ~34 us a
//      dripped call; r28_drip_agent skipped ~17 us of it and was
//      CHEAT_DETECTED as "shorter than its hand-off" (drip_check.h kShort),
//      r15_chunk_k8 and the padded r28_chunk_paced as slow;
//   2: the outputs' copy queued behind the call, one synchronize for both
//      (~26 us);
//   1: the inputs' copy only ordered before the call (~22 us; the agent
//      skips ~4 us). The harness's copies and events after the call then
//      overlap its GPU work, which hides a call alone's latency:
//      r28_chunk_paced was OK at 3.0x (against 1.3x for the honest kernel),
//      r28_drip_agent at 3.5x, with their drip batches "consistent".
// With 1 and 2 the legacy default stream is joined both ways (an event
// after the inputs' copy that it waits for, an event on it after the call
// that the outputs' copy waits for), so a call that reads its inputs with a
// synchronous cudaMemcpy (the naive embedding_lookup) sees them; a
// candidate's own stream not joined back into `stream` (an ABI breach) may
// return before its outputs are there: deferred (side_stream_short,
// graph_side_stream). PKFORGE_DRIP_WAITS chooses, for A/B measurements;
// read in CudaRank::Main, before any candidate code (red team round 29).
// 0: the batch queued on the GPU (DripCallsQueued, below), no wait on the
// CPU between two calls. H100, session 22 (scripts/gpu-session.sh s22b):
// the reference's dripped call 14-22 us against 26-35 with three waits, but
// bimodal from batch to batch (15, 17, 19-20 or 21.5-22.5 us for the same
// call), so the floor moved by more than the allowance and the honest
// r15_control_graph_update was CHEAT_DETECTED; a CPU takeover
// (r32_drip_spin_agent) still skipped ~5 us (convicted as short in both
// modes). Not the default.
int DripWaits() {
  static const int waits = [] {
    const char* v = std::getenv("PKFORGE_DRIP_WAITS");
    if (v == nullptr) return 3;
    const std::string_view s(v);
    return s == "0" ? 0 : s == "1" ? 1 : s == "2" ? 2 : 3;
  }();
  return waits;
}

// In set-up, before any candidate code runs: this rank's staging memory
// pinned (both sides alike: their copies must cost the same), and for a
// reference rank the host buffers and its own watcher thread.
void CudaRank::AllocateDrip() {
  if (drip_cap_ == 0 || stage_bytes_ == 0) return;
  // Pinned or not, the same on both sides (the same call on the same kind
  // of memory); unpinned copies only cost more on both.
  if (cudaHostRegister(Stage(mailbox_), static_cast<size_t>(stage_bytes_),
                       cudaHostRegisterDefault) != cudaSuccess)
    cudaGetLastError();
  // Without them a dripped call fails (its first event record), reported.
  if (cudaEventCreateWithFlags(&drip_in_ev_, cudaEventDisableTiming) != cudaSuccess ||
      cudaEventCreateWithFlags(&drip_legacy_ev_, cudaEventDisableTiming) != cudaSuccess)
    cudaGetLastError();
  if (DripWaits() == 0) AllocateQueuedDrip();
  if (!ref_) return;
  drip_golden_.assign(static_cast<size_t>(out_bytes_) * drip_cap_, 0);
  drip_stash_.assign(static_cast<size_t>(in_bytes_) * drip_cap_, 0);
}

// The reference's watcher thread (its own drip batches' and, queued, the
// candidate's), started in Main before the seccomp filter and before
// AllocateDrip: with queued batches pinned to the CPU the judge gave it
// (--watcher-cpu: none of the rank pairs' nor the judge's), where it
// spins; a candidate's threads stay on their pair's CPU (the same filter
// ignores their sched_setaffinity), so nothing of theirs runs there.
void CudaRank::StartDripWatcher() {
  drip_watcher_ = std::make_unique<ParkedThread>();
  if (DripWaits() != 0 || o_.watcher_cpu < 0) return;
  bool pinned = false;
  drip_watcher_->Run([&] { pinned = PinThisThread(o_.watcher_cpu); });
  drip_watcher_->Wait();
  watcher_pinned_ = pinned;
  if (!pinned)
    fprintf(stderr, "pkforge-cuda-rank: drip watcher not pinned to CPU %d; it yields\n",
            o_.watcher_cpu);
}

// How the watcher waits for returns: on the futex the calls' side wakes,
// or (queued batches: the GPU writes `returned`) spinning on its own CPU,
// or spinning and yielding on the pair's where it has none.
DripWait CudaRank::WatchMode() const {
  if (DripWaits() != 0) return DripWait::kFutex;
  return watcher_pinned_ ? DripWait::kSpin : DripWait::kSpinYield;
}

// Queued drip batches: the stream memory operations, this rank's drip word
// (its page of the mailbox) mapped for the GPU, and the calls' timing
// events. Without any of them the batches wait on the CPU (DripWaits 3),
// said on stderr; both sides run the same driver, so both fall back alike.
void CudaRank::AllocateQueuedDrip() {
  auto entry = [](const char* name, void** fn) {
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    return cudaGetDriverEntryPointByVersion(name, fn, 13000, cudaEnableDefault, &q) ==
               cudaSuccess &&
           q == cudaDriverEntryPointSuccess && *fn != nullptr;
  };
  char* page = mailbox_ + kCudaMailboxDripOffset;
  void* dev = nullptr;
  bool ok =
      entry("cuStreamWaitValue32", reinterpret_cast<void**>(&wait_value_)) &&
      entry("cuStreamWriteValue32", reinterpret_cast<void**>(&write_value_)) &&
      cudaHostRegister(page, kMaxWorld * kDripWordBytes, cudaHostRegisterMapped) == cudaSuccess &&
      cudaHostGetDevicePointer(&dev, OwnDripWord(), 0) == cudaSuccess;
  drip_call_ev_.assign(2 * static_cast<size_t>(drip_cap_), nullptr);
  for (cudaEvent_t& e : drip_call_ev_) ok = ok && cudaEventCreate(&e) == cudaSuccess;
  ok = ok && cudaEventCreateWithFlags(
                 &drip_done_ev_, cudaEventBlockingSync | cudaEventDisableTiming) == cudaSuccess;
  if (!ok) {
    cudaGetLastError();
    fprintf(stderr, "pkforge-cuda-rank: queued drip batches unavailable; waiting on the CPU\n");
    return;
  }
  drip_word_dev_ = reinterpret_cast<CUdeviceptr>(dev);
}

DripWord* CudaRank::OwnDripWord() const {
  return reinterpret_cast<DripWord*>(mailbox_ + kCudaMailboxDripOffset + o_.rank * kDripWordBytes);
}

DripWord* CudaRank::CandDripWord() const {
  char* mailbox = ref_ ? peer_mailbox_ : mailbox_;
  return reinterpret_cast<DripWord*>(mailbox + kCudaMailboxDripOffset + o_.rank * kDripWordBytes);
}

cudaError_t CudaRank::DecoyInputs(char* base, int slot, uint64_t seed, cudaStream_t stream) {
  for (size_t i = 0; i < in_.size(); ++i) {
    const Placed& p = in_[i];
    const uint64_t key = InputKey(seed, p, o_.rank, i);
    const cudaError_t e =
        GenerateInput(At(base, slot, p), p.dtype, key, p.numel, stream, p.desc.lo, p.desc.hi);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// The calls of a drip batch on this rank's own buffers (both sides): for
// call k >= kDripLead its staged inputs copied into its slot, the call, its
// outputs copied to the staging memory and a device-wide synchronize (work
// left on any stream is part of the call; DripWaits for the variants); then
// the return is marked.
// call_ns (the reference's own drip batch): each call's time from its start
// until its work was done (with the outputs' copy where one synchronize
// waits for both), the part of the hand-off that is the call's own.
void CudaRank::DripCalls(const Cmd& cmd, DripWord* w, char* stage, Reply* rep,
                         std::vector<int64_t>* call_ns) {
  if (stage_bytes_ == 0) {
    rep->rc = kRcHarness;
    snprintf(rep->message, sizeof rep->message, "drip batch without staging memory");
    return;
  }
  if (Queued()) {
    DripCallsQueued(cmd, w, stage, rep, call_ns);
    return;
  }
  std::vector<std::vector<pkf_tensor>> ins(cmd.count), outs(cmd.count);
  for (uint32_t k = 0; k < cmd.count; ++k) Tensors(data_, cmd.SlotAt(k), &ins[k], &outs[k]);
  int64_t out_at = 0;
  for (const Placed& p : in_) out_at += Up256(p.bytes);
  SideBarrierWait(control_, o_.rank, o_.world);
  cudaError_t err = cudaSuccess;
  const int waits = DripWaits();
  auto step = [&](cudaError_t e) {
    if (err == cudaSuccess) err = e;
  };
  RunDripCalls(
      cmd.count, w,
      [&](uint32_t k) {
        const int slot = static_cast<int>(cmd.SlotAt(k));
        if (k >= kDripLead) {
          // In place before the call starts: on its stream, and for the
          // legacy default stream through an event (waits 1), or waited
          // for (2, 3).
          const char* src = stage;
          for (const Placed& p : in_) {
            step(
                cudaMemcpyAsync(At(data_, slot, p), src, p.bytes, cudaMemcpyHostToDevice, stream_));
            src += Up256(p.bytes);
          }
          if (waits >= 2) {
            step(cudaStreamSynchronize(stream_));
          } else {
            step(cudaEventRecord(drip_in_ev_, stream_));
            step(cudaStreamWaitEvent(cudaStreamLegacy, drip_in_ev_, 0));
          }
        }
        if (err != cudaSuccess) return -10;
        control_->in_run[o_.rank].store(1);
        const int64_t t_call = MonotonicNs();
        nvtxRangePushA(RangeName());
        int rc = run_(&ctx_, ins[k].data(), static_cast<int32_t>(ins[k].size()), outs[k].data(),
                      static_cast<int32_t>(outs[k].size()), stream_);
        nvtxRangePop();
        if (rc == 0) {
          if (waits == 3) {
            step(cudaDeviceSynchronize());
            if (call_ns != nullptr) call_ns->push_back(MonotonicNs() - t_call);
          } else {
            step(cudaEventRecord(drip_legacy_ev_, cudaStreamLegacy));
            step(cudaStreamWaitEvent(stream_, drip_legacy_ev_, 0));
          }
          // On the call's stream: after its work there even if a candidate
          // patched a synchronize.
          char* dst = stage + out_at;
          for (const Placed& p : out_) {
            step(
                cudaMemcpyAsync(dst, At(data_, slot, p), p.bytes, cudaMemcpyDeviceToHost, stream_));
            dst += Up256(p.bytes);
          }
          step(waits == 3 ? cudaStreamSynchronize(stream_) : cudaDeviceSynchronize());
          if (call_ns != nullptr && waits < 3) call_ns->push_back(MonotonicNs() - t_call);
          if (err != cudaSuccess) rc = -10;
        }
        control_->in_run[o_.rank].store(0);
        return rc;
      },
      rep);
  if (err != cudaSuccess) Failed(rep, err, "a call of a drip batch");
}

// PKFORGE_DRIP_WAITS=0: the whole batch queued on the GPU, in the calls'
// order, nothing waited for on the CPU between two calls. For call k on
// `stream_`: a stream wait until released > k (the GPU polls the word the
// watcher writes), the staged inputs copied into the call's slot (k >=
// kDripLead), the legacy default stream joined, the start event, the call,
// the legacy stream joined back, the end event, the outputs copied to the
// staging memory and a stream write of returned = k + 1, which the
// watcher (DripWait::kSpin) sees. The harness's part of the hand-off is then
// GPU work queued before the candidate's code runs for the call: a
// candidate that takes the hand-off over skips only the GPU's few
// operations, not the CPU's waits and synchronizes of DripWaits 1-3 (red
// team round 30 findings 1 and 3: ~17-23 us a call to pad an amortizer
// into). The CPU's part of the candidate's calls (launches) is queued ahead
// as in its free-running batches, so the dripped call is the GPU's time
// (work on an own stream that is not joined back into `stream` is not
// waited for: deferred, as with 1 and 2 waits). At the end the device is
// synchronized (every stream), then the reply; a failed call or a watcher
// that gave up (kDripAbort releases every queued wait) ends the queuing and
// the GPU drains before `returned` says kDripAbort. call_ns: each call's
// time between its events.
void CudaRank::DripCallsQueued(const Cmd& cmd, DripWord* w, char* stage, Reply* rep,
                               std::vector<int64_t>* call_ns) {
  const uint32_t n = cmd.count;
  if (2 * static_cast<size_t>(n) > drip_call_ev_.size()) {
    rep->rc = kRcHarness;
    snprintf(rep->message, sizeof rep->message, "drip batch of %u calls, events for %zu", n,
             drip_call_ev_.size() / 2);
    return;
  }
  std::vector<std::vector<pkf_tensor>> ins(n), outs(n);
  for (uint32_t k = 0; k < n; ++k) Tensors(data_, cmd.SlotAt(k), &ins[k], &outs[k]);
  int64_t out_at = 0;
  for (const Placed& p : in_) out_at += Up256(p.bytes);
  const CUdeviceptr released = drip_word_dev_ + offsetof(DripWord, released);
  const CUdeviceptr returned = drip_word_dev_ + offsetof(DripWord, returned);
  cudaError_t err = cudaSuccess;
  auto step = [&](cudaError_t e) {
    if (err == cudaSuccess) err = e;
  };
  auto cu = [](CUresult r) { return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown; };
  SideBarrierWait(control_, o_.rank, o_.world);
  control_->in_run[o_.rank].store(1);
  int rc = 0;
  for (uint32_t k = 0; k < n && rc == 0; ++k) {
    if (w->released.load(std::memory_order_acquire) == kDripAbort) {
      rc = -3;
      snprintf(rep->message, sizeof rep->message, "drip batch abandoned before call %u", k);
      break;
    }
    const int slot = static_cast<int>(cmd.SlotAt(k));
    step(cu(wait_value_(stream_, released, k + 1, CU_STREAM_WAIT_VALUE_GEQ)));
    if (k >= kDripLead) {
      const char* src = stage;
      for (const Placed& p : in_) {
        step(cudaMemcpyAsync(At(data_, slot, p), src, p.bytes, cudaMemcpyHostToDevice, stream_));
        src += Up256(p.bytes);
      }
    }
    step(cudaEventRecord(drip_in_ev_, stream_));
    step(cudaStreamWaitEvent(cudaStreamLegacy, drip_in_ev_, 0));
    step(cudaEventRecord(drip_call_ev_[2 * k], stream_));
    if (err != cudaSuccess) {
      rc = -10;
      break;
    }
    nvtxRangePushA(RangeName());
    rc = run_(&ctx_, ins[k].data(), static_cast<int32_t>(ins[k].size()), outs[k].data(),
              static_cast<int32_t>(outs[k].size()), stream_);
    nvtxRangePop();
    if (rc != 0) {
      snprintf(rep->message, sizeof rep->message, "pkf_run returned %d (call %u of a drip batch)",
               rc, k);
      break;
    }
    step(cudaEventRecord(drip_legacy_ev_, cudaStreamLegacy));
    step(cudaStreamWaitEvent(stream_, drip_legacy_ev_, 0));
    step(cudaEventRecord(drip_call_ev_[2 * k + 1], stream_));
    char* dst = stage + out_at;
    for (const Placed& p : out_) {
      step(cudaMemcpyAsync(dst, At(data_, slot, p), p.bytes, cudaMemcpyDeviceToHost, stream_));
      dst += Up256(p.bytes);
    }
    step(cu(write_value_(stream_, returned, k + 1, CU_STREAM_WRITE_VALUE_DEFAULT)));
    if (err != cudaSuccess) rc = -10;
  }
  // Every queued wait ends: the watcher releases each call once the one
  // before matched, or gives up (kDripAbort). Waited for asleep (the pair's
  // CPU left to a watcher without one of its own), then the device.
  step(cudaEventRecord(drip_done_ev_, stream_));
  step(cudaEventSynchronize(drip_done_ev_));
  step(cudaDeviceSynchronize());
  control_->in_run[o_.rank].store(0);
  if (rc == 0 && err != cudaSuccess) rc = -10;
  if (rc != 0) {
    if (err != cudaSuccess && rc == -10) Failed(rep, err, "a call of a drip batch");
    rep->rc = rc;
    w->returned.store(kDripAbort, std::memory_order_release);
    WakeAll(&w->returned);
    return;
  }
  if (call_ns == nullptr) return;
  for (uint32_t k = 0; k < n; ++k) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, drip_call_ev_[2 * k], drip_call_ev_[2 * k + 1]) != cudaSuccess) {
      cudaGetLastError();
      call_ns->clear();  // no floor rather than a wrong one
      return;
    }
    call_ns->push_back(static_cast<int64_t>(ms * 1e6));
  }
}

// The staged outputs of the batch's call k against its expected ones
// (drip_golden_), on this CPU, within the problem's tolerance.
bool CudaRank::StagedOutputsMatch(const char* stage, uint32_t k) const {
  int64_t at = 0;
  for (const Placed& p : in_) at += Up256(p.bytes);
  const char* expected = drip_golden_.data() + static_cast<int64_t>(k) * out_bytes_;
  for (const Placed& p : out_) {
    CheckRecord c{};
    c.first_index = -1;
    if (CompareOutput(stage + at, expected, p, tol_, &c)) return false;
    at += Up256(p.bytes);
    expected += p.bytes;
  }
  return true;
}

// Call k's real inputs (k >= kDripLead) into the staging memory.
void CudaRank::StageInputs(char* stage, uint32_t k) const {
  const char* src = drip_stash_.data() + static_cast<int64_t>(k - kDripLead) * in_bytes_;
  for (const Placed& p : in_) {
    std::memcpy(stage, src, static_cast<size_t>(p.bytes));
    stage += Up256(p.bytes);
    src += p.bytes;
  }
}

// The reference's own drip batch, the baseline of batch_drip: its outputs
// of the batch (computed by its free-running batch just before) and its
// inputs of calls kDripLead.. copied to host memory (for this watcher and
// the candidate's), those inputs replaced by decoys, its outputs poisoned;
// then its calls on this thread, watched by drip_watcher_.
void CudaRank::SelfDrip(const Cmd& cmd, Reply* rep) {
  const uint32_t n = cmd.count;
  if (drip_watcher_ == nullptr || n > drip_cap_) {
    rep->rc = kRcHarness;
    snprintf(rep->message, sizeof rep->message, "drip batch of %u calls, the reference buffers %u",
             n, drip_cap_);
    return;
  }
  cudaError_t err = cudaSuccess;
  auto note = [&](cudaError_t e) {
    if (err == cudaSuccess) err = e;
  };
  for (uint32_t k = 0; k < n; ++k) {
    const int slot = static_cast<int>(cmd.SlotAt(k));
    char* g = drip_golden_.data() + static_cast<int64_t>(k) * out_bytes_;
    for (const Placed& p : out_) {
      note(cudaMemcpy(g, At(data_, slot, p), p.bytes, cudaMemcpyDeviceToHost));
      g += p.bytes;
    }
    if (k < kDripLead) continue;
    char* st = drip_stash_.data() + static_cast<int64_t>(k - kDripLead) * in_bytes_;
    for (const Placed& p : in_) {
      note(cudaMemcpy(st, At(data_, slot, p), p.bytes, cudaMemcpyDeviceToHost));
      st += p.bytes;
    }
    // The reference's own decoys (its own memory) from the time limit the
    // command carries: any value other than the call's inputs will do.
    note(DecoyInputs(data_, slot, DecoySeed(cmd.seed, k), stream_));
  }
  for (uint32_t k = 0; k < n && err == cudaSuccess; ++k)
    note(PoisonOutputs(data_, static_cast<int>(cmd.SlotAt(k))));
  note(cudaStreamSynchronize(stream_));
  if (Failed(rep, err, "the reference's drip batch set-up")) {
    rep->rc = kRcHarness;
    return;
  }
  drip_for_ = cmd;
  char* stage = Stage(mailbox_);
  std::vector<int64_t> call_ns;
  call_ns.reserve(n);
  // Its drip word in its own side's mailbox, as the candidate's is in its
  // side's (the same kind of memory; the queued batches' GPU waits on it).
  DripWord* word = OwnDripWord();
  ArmDrip(word);
  RunSelfDrip(
      drip_watcher_.get(),
      [&] {
        return WatchDrip(
            word, n, static_cast<int64_t>(cmd.seed), nullptr,
            [&](uint32_t k) { return StagedOutputsMatch(stage, k); },
            [&](uint32_t k) { StageInputs(stage, k); }, WatchMode());
      },
      [&](Reply* calls) { DripCalls(cmd, word, stage, calls, &call_ns); }, rep);
  // The floor of the candidate's hand-off (drip_check.h kShort): this
  // batch's median call, measured here, where no candidate code runs.
  if (rep->rc == 0 && !call_ns.empty()) {
    const auto mid = call_ns.begin() + static_cast<std::ptrdiff_t>(call_ns.size() / 2);
    std::nth_element(call_ns.begin(), mid, call_ns.end());
    rep->t1_ns = *mid;
  }
  // Now, not when the inputs were generated: nothing the candidate queued
  // behind its drip word can start before both of this rank's rounds are
  // over (red team round 28 r28_drip_ref_hog).
  if (rep->rc == 0) ArmDrip(CandDripWord());
}

// The candidate's drip batch, watched on this thread: at each return its
// staged outputs are compared with the reference's (from this rank's own
// drip batch of the same slots, just before) and the next call's inputs
// staged.
void CudaRank::WatchCandidateDrip(const Cmd& cmd, Reply* rep) {
  if (drip_for_.count != cmd.count || drip_for_.slot != cmd.slot || drip_for_.ring != cmd.ring ||
      cmd.count > drip_cap_) {
    rep->rc = kRcHarness;
    snprintf(rep->message, sizeof rep->message,
             "watching a drip batch the reference did not run first (%u calls from slot %u)",
             cmd.count, cmd.slot);
    return;
  }
  char* stage = Stage(peer_mailbox_);
  DripWatch d;
  auto watch = [&] {
    d = WatchDrip(
        CandDripWord(), cmd.count, static_cast<int64_t>(cmd.seed), &control_->drip_stop,
        [&](uint32_t k) { return StagedOutputsMatch(stage, k); },
        [&](uint32_t k) { StageInputs(stage, k); }, WatchMode());
  };
  // Queued: on the watcher thread (its own CPU, where it spins), as the
  // reference's own drip batch is watched; else on this thread.
  if (DripWaits() == 0) {
    drip_watcher_->Run(watch);
    drip_watcher_->Wait();
  } else {
    watch();
  }
  FillDripReply(d, rep);
}

}  // namespace pkforge::kernels::cuda
