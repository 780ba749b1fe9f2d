// The two halves of a drip batch's hand-off (protocol.h kOpDrip,
// kOpDripWatch; the check that judges it: drip_check.h), shared by the host
// rank (rank.cc) and the cuda rank (kernels/cuda/rank_cuda.cc):
//   - RunDripCalls: the calls' side. Call k starts once the DripWord says
//     released > k and is marked returned = k + 1 after it. Harness code in
//     a candidate process: a candidate can patch it, which only withholds
//     its own inputs or gets its own calls verified early.
//   - WatchDrip: the watcher's side (trusted: a reference rank, or the
//     reference's own drip watcher thread). At each return it calls
//     `verify(k)` (host: compare the live outputs; cuda: copy them into a
//     snapshot that is compared after the batch), then `release(k + lead)`
//     puts that call's inputs in place and the word releases it. The time
//     between two returns seen is a call's share of the batch.
//   - ParkedThread: the reference's own watcher thread, started before any
//     candidate code runs.
// Waits sleep on a futex, never spin: the calls' side and its watcher share
// one CPU (rank_pool_start.cc pins rank r of both sides, and the reference's
// watcher thread, to one CPU). Except DripWait::kSpin (the cuda backend's
// queued drip batches, rank_cuda_drip.cc): the GPU writes `returned` and
// wakes nobody, so the watcher spins, on a thread of its own pinned to a CPU
// of its own (PinThisThread, before the seccomp filter that ignores
// sched_setaffinity); kSpinYield where no CPU was left for it (it shares the
// pair's, which the calls' side leaves asleep while the GPU works).
// Thread safety: RunDripCalls and WatchDrip run on two different threads
// or processes over one DripWord; ParkedThread: Run and Wait from one thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/harness/protocol.h"

namespace pkforge::kernels {

// One thread, started before any candidate code runs, that runs jobs handed
// to it one at a time (the reference's own drip watcher). A thread created
// later could fail: candidate processes share the task limit (red team
// round 7 pids_exhaust_blame: idle threads up to pids.max, then the
// reference's std::thread threw, an abort blamed on the harness).
class ParkedThread {
 public:
  ParkedThread();
  ~ParkedThread();
  ParkedThread(const ParkedThread&) = delete;
  ParkedThread& operator=(const ParkedThread&) = delete;

  void Run(std::function<void()> job);
  void Wait();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool done_ = true;
  bool quit_ = false;
  std::thread t_;  // last: starts once the rest is constructed
};

// Pins the calling thread to `cpu` and reads its affinity back: true when
// it is now that CPU alone (false under the candidate's seccomp filter,
// which makes sched_setaffinity a silent no-op, or for a CPU not allowed).
bool PinThisThread(int cpu);

// Arms a drip word: the first kDripLead calls released, none returned.
void ArmDrip(DripWord* w);

// The calls of a drip batch: for k < n, waits until released > k, then
// `call(k)` (0: it returned; else its code, which aborts the batch and is
// reported in rep as "pkf_run returned N (call k of a drip batch)"), then
// returned = k + 1. A watcher that gave up (released == kDripAbort) aborts
// it too (rc -3).
void RunDripCalls(uint32_t n, DripWord* w, const std::function<int(uint32_t)>& call, Reply* rep);

struct DripWatch {
  uint32_t matched = 0;         // calls whose outputs matched at their return
  int64_t first_bad = -1;       // the first call that did not
  bool stopped = false;         // the calls stopped (a failure, or the time limit)
  std::vector<int64_t> gap_ns;  // between two returns seen (calls 1..)
  int64_t last_ns = 0;          // MonotonicNs when the last return was seen
};

// The watcher's loop over n calls (see the top). `stop` (the reference
// side's drip_stop, null for the reference's own drip batch): set by the
// judge once the calls' side has replied; a return still awaited then never
// comes. The calls' side's last store to `returned` precedes its reply, so a
// load after seeing `stop` is final. limit_ms bounds the whole batch.
// how: kFutex sleeps until the calls' side wakes it; kSpin polls (above),
// kSpinYield polls and yields the CPU between two looks; both release
// without a futex wake (nothing of the harness sleeps on `released` then).
enum class DripWait { kFutex, kSpin, kSpinYield };
DripWatch WatchDrip(DripWord* w, uint32_t n, int64_t limit_ms, const std::atomic<uint32_t>* stop,
                    const std::function<bool(uint32_t)>& verify,
                    const std::function<void(uint32_t)>& release, DripWait how = DripWait::kFutex);

// The reference's own drip batch: `watch` (a WatchDrip) on `watcher`, the
// calls (`calls`, filling the calls' reply) on this thread, then the reply:
// FillDripReply, and a harness failure when the calls failed or the watcher
// stopped (nothing of the candidate's runs in it).
void RunSelfDrip(ParkedThread* watcher, const std::function<DripWatch()>& watch,
                 const std::function<void(Reply*)>& calls, Reply* rep);

// The watcher's reply (protocol.h "Both drip replies"): value = matched,
// input_diff = 1 + the first call that did not match (0: none), t0_ns = the
// median gap between two returns, t1_ns = 1 when the calls stopped early,
// else when the last return was seen (MonotonicNs; the reference's own drip
// reply replaces it, RunSelfDrip).
void FillDripReply(const DripWatch& d, Reply* rep);

}  // namespace pkforge::kernels
