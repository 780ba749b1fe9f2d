// Judge <-> rank process protocol: fixed-size binary messages over pipes.
//
// Commands go judge -> rank on kFdCmd, replies rank -> judge on kFdReply. Both
// are smaller than PIPE_BUF, so each write is atomic. A candidate rank process
// can write anything on its reply pipe: the judge validates magic and op and
// trusts nothing in a candidate reply except as a claim to be cross-checked
// (times against its own wall clock; outputs are read by reference ranks).
//
// Also the segment layout, computed identically by judge and ranks from the
// evaluation's parameters (so no layout travels over a channel).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/harness/problem.h"
#include "kernels/harness/rng.h"
#include "kernels/harness/siphash.h"

namespace pkforge::kernels {

inline constexpr uint32_t kMagic = 0x504b4631;  // "PKF1"

enum Op : uint32_t {
  kOpSetup = 1,     // both: load candidate / prepare reference, pkf_setup
  kOpGen = 2,       // ref: generate inputs of the batch's slots from `seed` into both sides, poison outputs
  kOpRun = 3,       // both: barrier, one call on `slot` (correctness trials)
  kOpCheck = 4,     // ref: compare the snapshots of the batch's candidate outputs (and its live
                    //      inputs) with the reference; value = index of the first bad call
  kOpDigest = 5,    // ref: hash of candidate outputs of `slot` (live)
  kOpSnapshot = 6,  // ref: copy the candidate outputs of the batch's slots into trusted memory
  kOpSnapCompare = 7,  // ref: bytes of the live candidate outputs of `slot` that differ from snapshot 0
  kOpPoison = 8,    // ref: poison candidate outputs of `slot`; cand (cuda): a context switch
  kOpExit = 9,      // both: pkf_teardown, exit
  kOpSync = 10,     // both: cuda: device-wide synchronize; host: no-op
  kOpBatch = 11,    // both: `count` back-to-back calls on the batch's slots (one barrier first);
                    //       t0/t1 = the rank's own view of the batch (cross-check only)
  kOpPoisonCheck = 12,  // ref: value = output elements of the batch's candidate slots that are
                        //      not poison (must be 0 before the candidate runs)
  kOpIdle = 13,     // ref (cuda): value = ns for an empty kernel to complete on this GPU
                    //       (seed & kIdleWithCopies: and 32-byte copies device to device,
                    //       host to device, device to host; waited for 200 ms at most)
  kOpSwitch = 15,   // ref (cuda): run an empty kernel in a second, idle GPU context of this
                    //       rank, so the next timed batch of either side starts with a
                    //       context switch alike (host: no-op)
  kOpProgress = 16,  // ref: value = calls of the batch whose live candidate outputs all match
                     //       the reference's within tolerance (a progress probe: the candidate is
                     //       frozen in the middle of the batch; the reference ran it already)
  kOpInit = 17,     // cand (cuda): the harness's set-up, no candidate code (device, buffers,
                    //       NCCL; the IPC handle in the mailbox); run beside the ref's kOpSetup
  kOpAttach = 18,   // ref (cuda): open the candidate's buffers from the mailbox, after kOpInit
                    //       and before the candidate's code is loaded (kOpSetup)
  kOpHello = 14,    // cand: sent unasked once hardened, before any candidate code is loaded;
                    //       rc = kRcHarness when hardening failed (the only trusted cand reply)
  // Drip batches (check batch_drip; cuda: CudaDripCalls): call k + kDripLead's inputs are
  // put in place only once call k's outputs were verified, so no call can
  // see the inputs of a call more than kDripLead - 1 ahead.
  kOpDrip = 19,       // cand: `count` calls, call k started once its rank's DripWord says
                      //       released > k, returned = k + 1 after it.
                      // ref: the same on its own buffers, its own inputs released by a
                      //       watcher thread of the rank (the candidate frozen meanwhile);
                      //       seed = the watcher's time limit, ms. The batch's slots must
                      //       hold the reference's outputs (golden) when it starts.
  kOpDripWatch = 20,  // ref: watch the candidate's drip batch: at each return compare the
                      //       call's live outputs with the reference's, then copy call
                      //       k + kDripLead's inputs in and release it; seed = time limit, ms.
                      //       (cuda: through the rank's host staging memory in the
                      //       candidate side's mailbox; the calls' side copies the staged
                      //       inputs in before a call and its outputs out after it:
                      //       kernels/cuda/rank_cuda_drip.cc.)
                      // Both drip replies (ref): value = calls whose outputs matched at
                      //       their return, input_diff = 1 + the first call that did not
                      //       (0: none), t0_ns = the median time between two returns seen
                      //       by the watcher (ns: the calls' throughput),
                      //       t1_ns = 1 when the watched calls stopped before the end
                      //       (kOpDripWatch: rc stays 0, it is the candidate's doing),
                      //       else (kOpDripWatch) when the watcher saw the last return
                      //       (CLOCK_MONOTONIC ns);
                      //       the reference's own (kOpDrip, cuda): t1_ns = the median
                      //       of its calls alone, each from its start until its work
                      //       was done (ns; what of the hand-off is the call's own).
};

// Cmd::flags of kOpGen: kGenDrip writes decoys (other generated inputs) into
// the candidate's inputs of every call of the batch but the first kDripLead,
// and arms the candidate's drip words (released kDripLead, returned 0; cuda:
// at the end of the reference's own drip batch instead, kOpDrip).
inline constexpr uint32_t kGenDrip = 2;
// How far ahead of the last verified call inputs are released. 1: no call
// sees another's inputs. 2 was tried (2026-12-05) to take the hand-off off
// an honest candidate's path; it does not on a host whose rank and watcher
// share a CPU (the watcher's work still runs between the calls: an honest
// barrier-free allreduce dripped at 33 us a call against 44 us at 1, the
// reference at 52 against 63), lets two calls be fused, and makes the
// candidate wait runnable behind its watcher (counted as starvation).
inline constexpr uint32_t kDripLead = 1;
// kOpIdle's seed: the probe also times copies on every copy engine (the
// judge's idle checks; the round-trip measurement times the kernel alone, as
// timed batches pay no copy).
inline constexpr uint64_t kIdleWithCopies = 1;
// returned == kDripAbort: the calls stopped (a call failed); released ==
// kDripAbort: the watcher gave up. The largest positive int32: a GPU's
// stream wait for released >= k (cuStreamWaitValue32 GEQ compares
// (int32_t)(*word - k) >= 0) ends on it too, so a queued cuda drip batch
// (rank_cuda_drip.cc, PKFORGE_DRIP_WAITS=0) drains when its watcher gives up.
inline constexpr uint32_t kDripAbort = 0x7fffffffu;

// One rank's drip hand-off words, in its side's data segment after the slots
// (DataLayout::drip_offset + rank * kDripWordBytes). On the candidate side
// they are candidate-writable: a candidate that forges them only withholds
// its own inputs or gets its calls verified early.
struct DripWord {
  std::atomic<uint32_t> released;  // calls whose inputs are in place
  std::atomic<uint32_t> returned;  // calls that returned
};
inline constexpr int64_t kDripWordBytes = 64;
// Most calls in one drip batch: a median over 31 gaps is steady, and each
// dripped call costs hand-offs on both sides (at the default sizes on the
// host, 40-60 ms against 12-28 ms free-running: comparing and copying MiBs).
// The reference ranks size their drip buffers with it in their setup, before
// any candidate code runs.
inline constexpr uint32_t kDripCalls = 32;
// cuda: the calls of a drip batch the reference rank buffers (host copies
// of each call's expected outputs and of its inputs, for both watchers;
// 256 MiB at most, allocated in its setup before any candidate code runs;
// and no more than the snapshots the judge's check after the batch uses).
// 0: no cuda drip batches for this problem and size (a batch of
// fewer calls would be inconclusive: drip_check.h kMinDripCalls = 9; long
// calls gain nothing from amortization anyway). Judge and ranks compute it
// alike, from one rank's input and output bytes.
inline uint32_t CudaDripCalls(int64_t in_bytes, int64_t out_bytes) {
  const int64_t out_stride = out_bytes > 256 ? out_bytes : 256;
  const int64_t per = out_stride + in_bytes;
  int64_t n = (int64_t{256} << 20) / (per > 0 ? per : 1);
  if (n > kDripCalls) n = kDripCalls;
  const int64_t snapshots = (int64_t{2} << 30) / out_stride;  // MaxBatch's bound
  if (n > snapshots) n = snapshots;
  return n < 9 ? 0 : static_cast<uint32_t>(n);
}

// Most calls in one timed batch for a rank whose outputs take out_bytes: the
// reference rank keeps a snapshot of every call's outputs (<= 2 GiB in all,
// allocated in its setup, before any candidate code runs). Judge and ranks
// compute it alike.
inline constexpr int64_t kMaxBatchCalls = 1024;
inline uint32_t MaxBatch(int64_t out_bytes) {
  const int64_t per = out_bytes > 256 ? out_bytes : 256;
  const int64_t n = (int64_t{2} << 30) / per;
  return static_cast<uint32_t>(n < 1 ? 1 : n > kMaxBatchCalls ? kMaxBatchCalls : n);
}

// rc of a reply that reports a failure of the harness itself (not the candidate).
inline constexpr int32_t kRcHarness = -50;

// A batch names `count` slots: (slot + k) % ring for k < count (ring 0 = no
// wrap). Single-slot commands use count 1.
// Cmd::flags
inline constexpr uint32_t kGenReferenceOnly = 1;  // kOpGen: the reference's own buffers only
                                                  // (before the candidate's exist)
                                                  // (kGenDrip = 2: above)

struct Cmd {
  uint32_t magic;
  uint32_t op;
  uint32_t slot;
  uint32_t count;
  uint32_t ring;
  uint32_t flags;
  uint64_t seed;
  uint32_t SlotAt(uint32_t k) const {
    return ring == 0 ? slot + k : (slot + k) % ring;
  }
};

// True when `cmd` names buffer slots (every op but set-up, exit and the
// device-wide ones) and any of them lies outside 0..slots-1, or its count or
// ring is malformed: the rank refuses such a command. Shared by the host and
// cuda ranks.
inline bool BadSlots(const Cmd& cmd, int slots) {
  const bool slotted = cmd.op != kOpSetup && cmd.op != kOpExit && cmd.op != kOpSync &&
                       cmd.op != kOpIdle && cmd.op != kOpSwitch;
  if (!slotted) return false;
  const uint32_t n = static_cast<uint32_t>(slots);
  if (cmd.count < 1 || cmd.count > n || cmd.ring > n) return true;
  for (uint32_t k = 0; k < cmd.count; ++k)
    if (cmd.SlotAt(k) >= n) return true;
  return false;
}

// Per-call input seeds of a batch, derived from the one secret seed sent to
// the reference ranks by a keyed PRF (siphash.h): one call's key, which a
// candidate can recover from that call's inputs (harness/rng.h is invertible),
// tells nothing about the batch's seed or another call's key. (It was
// SplitMix64 of seed + k: one inversion gave the seed, and with it a drip
// batch's inputs before their release: red team round 28, finding 7.)
inline constexpr uint64_t kBatchSeedKey = 0x243f6a8885a308d3ull;
inline uint64_t BatchSeed(uint64_t seed, uint32_t k) {
  return SipHash24(seed, kBatchSeedKey, static_cast<uint64_t>(k));
}
// The seed of call k's decoys in a drip batch (never the call's own): the
// same key, another message (no related key: red team round 29).
inline uint64_t DecoySeed(uint64_t seed, uint32_t k) {
  return SipHash24(seed, kBatchSeedKey, static_cast<uint64_t>(k) | (uint64_t{1} << 32));
}

inline constexpr int kMaxOutputs = 4;

struct CheckRecord {
  int64_t elements;
  int64_t mismatches;
  int64_t unwritten;
  int64_t first_index;  // -1 when none
  double max_abs;
  double max_rel;
  double expected;
  double actual;
};

struct Reply {
  uint32_t magic;
  uint32_t op;
  int32_t rc;
  uint32_t n_checks;
  int64_t t0_ns;  // CLOCK_MONOTONIC (system-wide, comparable with the judge's)
  int64_t t1_ns;
  uint64_t value;         // digest / differing bytes
  uint64_t input_diff;    // kOpCheck: bytes of candidate inputs that differ from the originals
  CheckRecord checks[kMaxOutputs];
  char message[256];
};
static_assert(sizeof(Reply) < 4096, "replies must be atomic pipe writes");

// Placement of one tensor inside a side's data segment.
struct Placed {
  int64_t offset = 0;
  int64_t bytes = 0;
  int64_t numel = 0;
  pkf_dtype dtype = PKF_F32;  // desc.dtype, else the evaluation's dtype
  TensorDesc desc;
};

// The generator key of input `i` of `rank` from a call's seed (BatchSeed,
// DecoySeed); a replicated tensor has one key on every rank. The host and
// cuda ranks both derive it here, so their inputs agree (the oracle tests).
inline uint64_t InputKey(uint64_t seed, const Placed& p, int rank, size_t i) {
  return StreamKey(seed, p.desc.replicated ? kReplicatedRank : static_cast<uint32_t>(rank),
                   static_cast<uint32_t>(i));
}

struct DataLayout {
  int world = 0;
  int slots = 0;
  int64_t slot_bytes = 0;
  int64_t total_bytes = 0;
  int64_t elem_bytes = 0;
  std::vector<std::vector<Placed>> in;   // [rank][i], offsets within a slot
  std::vector<std::vector<Placed>> out;  // [rank][o]
  int64_t max_rank_bytes = 0;            // inputs + outputs of the largest rank
  int64_t drip_offset = 0;               // the drip words (after the slots)
  int64_t SlotBase(int slot) const { return slot * slot_bytes; }
  DripWord* Drip(char* base, int rank) const {
    return reinterpret_cast<DripWord*>(base + drip_offset + rank * kDripWordBytes);
  }
};

DataLayout MakeLayout(const Problem& p, const Dims& dims, int world, pkf_dtype dtype, int slots);

// cuda drip batches for a layout (any slot count; judge and ranks alike):
// the calls of one (the least CudaDripCalls over the ranks; 0 with
// PKFORGE_CUDA_DRIP=0), and the host staging memory each rank needs for
// them in its side's mailbox (one call's inputs, then its outputs, each
// 256-aligned; a multiple of 4096; 0 without drip batches).
uint32_t CudaDripLength(const DataLayout& l);
int64_t CudaDripStageBytes(const DataLayout& l);

// The pkf_tensor a rank passes to pkf_run for placed tensor `p` at `data`
// (the host and cuda ranks alike).
inline pkf_tensor DescribeTensor(const Placed& p, void* data) {
  pkf_tensor x;
  std::memset(&x, 0, sizeof x);
  x.data = data;
  x.dtype = p.dtype;
  x.ndim = static_cast<int32_t>(p.desc.shape.size());
  for (size_t d = 0; d < p.desc.shape.size() && d < 8; ++d) x.shape[d] = p.desc.shape[d];
  return x;
}

// NaN bit patterns written into outputs before calls (detects unwritten outputs);
// integer dtypes: 0xa5 in every byte (a large negative value no id has).
uint32_t PoisonBits(pkf_dtype dtype);
void PoisonBuffer(void* data, int64_t numel, pkf_dtype dtype);

}  // namespace pkforge::kernels
