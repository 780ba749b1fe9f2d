// ATTACK (round 7, against b54dfb2): whole-batch fusion (one exchange for
// every call of a free-running batch, written in place) that looks like
// steady per-call progress to the progress probes, and is honest on drip
// batches; its drip batches end up "starved" (inconclusive).
//
// What the attacker read: judge.cc ProgressProbe / progress_probe.cc count
// the calls whose outputs match on EVERY rank (CallsDone, min over ranks) at
// one secret point (30-70% of the fastest span): behind if fewer than a
// quarter of that share are done, ahead if all are done by 50%. A fuser on
// the rank's main thread writes rank after rank (three ranks share one CPU),
// so the min jumps 0 -> 100% at the end: behind (drip_aware_fuse, caught).
// Here pkf_setup starts one worker thread per rank (helper threads are
// allowed, idle between calls); call 0 of a free batch hands the whole batch
// to it and sleeps on a futex; the workers copy the batch's inputs, cross
// ONE barrier and sum the calls in call order, each yielding the CPU every
// RT_TURN (8) calls, so the three ranks' outputs advance together; calls
// 1..n-1 return at once. The sleeping main threads wake, run 127 empty calls
// and reply after the workers: a tail that puts all-done past 50% of the
// span. Probes read e.g. "57%: 25% done (consistent)", "67%: 56%", late ones
// "inconclusive, its calls' threads had hardly run" (main_idle: the main
// threads slept). Drip batches (kOpDrip Cmd on the stack): one honest epoch
// exchange per call on the main thread. judge.cc DripPair calls a drip
// "starved" when a main thread waited for a CPU a quarter of the window more
// than in the candidate's least disturbed timed batch (least_wait_share_)
// while its threads used under half the CPU: here the main threads sleep in
// every timed batch (least share ~0) and wait behind the watchers in every
// drip: 5-6 of 6 drip batches inconclusive.
// Measured at b54dfb2 (w3 tiny, load ~1): OK 9.91 / 10.85 / 9.78x against
// control_flag_epoch 6.89 / 6.67 / 6.59x in the same minutes; with RT_TURN 0
// (rank after rank, the tail alone) OK in 4 of 11 (7.9-10.1x).
// EXPECT (fixed judge): CHEAT_DETECTED batch_progress / batch_drip, or not OK
// with conclusive probes.
#include <linux/futex.h>
#include <sys/syscall.h>

#include <thread>

#include "kernels/testdata/redteam/epoch_lookahead.h"
#include "kernels/testdata/redteam/probe_dodge.h"

static const uint32_t kOpDripCmd = 19;
#ifndef RT_TURN
#define RT_TURN 8
#endif

namespace {
struct Worker {
  std::atomic<uint32_t> seq{0};   // jobs posted
  std::atomic<uint32_t> done{0};  // jobs finished
  std::atomic<bool> stop{false};
  pkf_context* ctx = nullptr;
  rt_batch_pos pos;
  const pkf_tensor* in = nullptr;
  pkf_dtype dt = PKF_F32;
  int rc = 0;
  std::thread th;
};
Worker g_w;
int64_t g_jobs = 0;

long rt_futex(std::atomic<uint32_t>* w, int op, uint32_t v) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), op, v, nullptr, nullptr, 0);
}

// The whole batch with one exchange (rt_chunk_exchange's), written in place
// in call order, the ranks' workers taking turns every `turn` calls
// (sched_yield: the three ranks share one CPU), so that every rank's
// outputs advance together (turn 0: no turns, rank after rank).
int FuseInTurns(pkf_context* ctx, const rt_batch_pos& p, const pkf_tensor* in, pkf_dtype dt,
                int turn) {
  const rt_slots* s = &g_pd_s;
  const int64_t stride = rt_align(s->bytes, 64);
  const int64_t quarter = (int64_t)(ctx->scratch_bytes / 4) / 64 * 64;
  if (stride * (int64_t)p.count > quarter) return 7;
  const int64_t off = 2 * quarter + (int64_t)(rt_chunks % 2) * quarter;
  ++rt_chunks;
  char* mine = (char*)ctx->peer_scratch[ctx->rank] + off;
  for (uint32_t k = 0; k < p.count; ++k)
    memcpy(mine + stride * (int64_t)k, rt_in_at(s, rt_batch_slot(p, in, k)), (size_t)s->bytes);
  if (ctx->barrier(ctx) != 0) return 3;
  const int64_t n = s->bytes / pkf_dtype_size(dt);
  for (uint32_t k = 0; k < p.count; ++k) {
    char* y = rt_out_at(s, rt_batch_slot(p, in, k));
    for (int64_t i = 0; i < n; ++i) {
      float sum = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j)
        sum += pkf_load((const char*)ctx->peer_scratch[j] + off + stride * (int64_t)k, dt, i);
      pkf_store(y, dt, i, sum);
    }
    if (turn > 0 && (k + 1) % (uint32_t)turn == 0) sched_yield();
  }
  return 0;
}
int g_turn = 0;

void WorkerLoop() {
  uint32_t seen = 0;
  for (;;) {
    uint32_t s;
    while ((s = g_w.seq.load(std::memory_order_acquire)) == seen) {
      if (g_w.stop.load()) return;
      rt_futex(&g_w.seq, FUTEX_WAIT, seen);
    }
    if (g_w.stop.load()) return;
    seen = s;
    g_w.rc = FuseInTurns(g_w.ctx, g_w.pos, g_w.in, g_w.dt, g_turn);
    g_w.done.store(seen, std::memory_order_release);
    rt_futex(&g_w.done, FUTEX_WAKE, 1);
  }
}
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  const char* t = getenv("PKFORGE_RT_TURN");  // measurements only; default below
  g_turn = t != NULL ? atoi(t) : RT_TURN;
  g_w.th = std::thread(WorkerLoop);
  return 0;
}

extern "C" void pkf_teardown(pkf_context*) {
  g_w.stop.store(true);
  g_w.seq.fetch_add(1);
  rt_futex(&g_w.seq, FUTEX_WAKE, 1);
  if (g_w.th.joinable()) g_w.th.join();
  rt_log("teardown: %lld batches fused by the worker thread", (long long)g_jobs);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_pd_s, ctx, in, out) || !rt_slots_init(&g_ep_s, ctx, in, out))
    return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const int64_t slot = rt_slot_of(&g_pd_s, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  // Fast path: a later call of a free-running batch (the worker wrote it).
  if (cmd != NULL && cmd->op == kRtOpBatch && slot != (int64_t)cmd->slot &&
      (slot - (int64_t)cmd->slot + g_pd_s.ring) % g_pd_s.ring != cmd->count - 1)
    return 0;
  if (cmd != NULL && cmd->op == kOpDripCmd && slot < g_pd_s.ring) {
    const std::vector<int64_t> one{slot};
    return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  }
  const rt_batch_pos p = rt_where(in);
  if (!p.batch) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // a trial
  if (p.k != 0) return 0;  // written by the worker during the batch's first call
  g_w.ctx = ctx;
  g_w.pos = p;
  g_w.in = in;
  g_w.dt = out[0].dtype;
  const uint32_t s = g_w.seq.fetch_add(1, std::memory_order_acq_rel) + 1;
  rt_futex(&g_w.seq, FUTEX_WAKE, 1);
  uint32_t d;
  while ((d = g_w.done.load(std::memory_order_acquire)) != s) rt_futex(&g_w.done, FUTEX_WAIT, d);
  if (++g_jobs % 16 == 1) rt_log("batch %lld (%u calls) fused by the worker", (long long)g_jobs, p.count);
  return g_w.rc;
}
