// ATTACK (round 6, making every drip batch "starved" with the WATCHER's CPU
// time): drip_starve_spinner needs a thread whose CPU time the judge does
// not see; this one needs none. A drip batch is starved (DripPair) when a
// candidate main thread's run-queue wait share exceeds its least one + 0.25
// while the candidate used under half its CPUs. The watcher of rank r (the
// reference rank's main thread, pinned to the same CPU) sleeps on the
// candidate's drip word `returned` (DripWord, the last page of the rank's
// own data segment: layout.cc drip_offset) with FUTEX_WAIT on shared memory,
// and re-checks at every wake-up. So on a drip batch each candidate call,
// after writing its (correct) outputs, stores returned = k + 1 itself and
// then, until the watcher released call k + 1, does nothing but FUTEX_WAKE
// that word: the watcher wakes, finds nothing new, sleeps, again and again
// - foreign CPU time (a trusted process) that the candidate's main thread,
// runnable all along, waits behind. Peers' flags in the exchange are waited
// for the same way. A drip batch is told by a cached call whose inputs
// changed (the decoys were replaced): never on a free-running batch, which
// is amortized by private look-ahead in chunks of 4 (epoch_lookahead.h).
// The batch's call count comes from the harness's command on the stack.
// Each drip call first spends 300 us waking the watcher so (FUTEX_WAKE then
// sched_yield, to hand it the CPU).
// HELD at 48cf809 (3/3 CHEAT_DETECTED batch_drip, "slow", 373 us a drip call
// vs 62 us): the watcher's re-check is cheap (~2121 wake-ups a batch per
// rank got through), the candidate's own wake/yield loop is most of the CPU
// time, so `used` stays above one half and the batch is not "starved".
// Without the yield (FUTEX_WAKE alone, 68000 a batch) the watcher was not
// even scheduled. A regression test for the starvation rule.
// EXPECT: CHEAT_DETECTED batch_drip (or batch_progress / batch_consistency).
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "kernels/testdata/redteam/epoch_lookahead.h"

namespace {

struct Word {
  std::atomic<uint32_t> released, returned;
};
struct StackCmd {
  uint32_t magic, op, slot, count, ring, flags;
  uint64_t seed;
};
constexpr uint32_t kMagic = 0x504b4631, kOpDrip = 19;

constexpr int64_t kStormNs = 300000;  // per drip call
Word* g_word = nullptr;
const volatile StackCmd* g_cmd = nullptr;
int64_t g_drips = 0, g_wakes = 0;

void Storm(Word* w) {
  // Wake it, and give it the CPU (sched_yield): it runs its check now.
  syscall(SYS_futex, &w->returned, FUTEX_WAKE, 1, nullptr, nullptr, 0);
  sched_yield();
  ++g_wakes;
}

// The harness's kOpDrip command above this frame (its first slot = `first`).
const volatile StackCmd* FindCmd(int64_t first) {
  char* base = nullptr;
  size_t size = 0;
  char* here = (char*)__builtin_frame_address(0);
  if (!rt_mapping_of(here, &base, &size)) return nullptr;
  for (char* p = (char*)((uintptr_t)here & ~(uintptr_t)7); p + sizeof(StackCmd) <= base + size;
       p += 4) {
    const StackCmd* c = (const StackCmd*)p;
    if (c->magic == kMagic && c->op == kOpDrip && c->slot == (uint32_t)first && c->count >= 2 &&
        c->count <= 1024)
      return c;
  }
  return nullptr;
}

// One exchange for this call alone (epoch_lookahead.h's), its waits for
// peers replaced by wake-ups of this rank's watcher.
int DripExchange(pkf_context* ctx, int64_t slot, pkf_dtype dt, char* dst) {
  const rt_slots& s = g_ep_s;
  const uint32_t e = ++g_ep_epoch;
  const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
  if (s.bytes > half) return 7;
  auto wait_all = [&](uint32_t at_least) {
    for (int32_t j = 0; j < ctx->world_size; ++j)
      while (__atomic_load_n(&ctx->peer_flags[j][2], __ATOMIC_ACQUIRE) < at_least) Storm(g_word);
  };
  if (e > 1) wait_all(e - 1);
  char* mine = (char*)ctx->peer_scratch[ctx->rank] + (e % 2) * half;
  memcpy(mine, rt_in_at(&s, slot), (size_t)s.bytes);
  __atomic_store_n(&ctx->peer_flags[ctx->rank][2], e, __ATOMIC_RELEASE);
  wait_all(e);
  const int64_t n = s.bytes / pkf_dtype_size(dt);
  for (int64_t i = 0; i < n; ++i) {
    float sum = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j)
      sum += pkf_load((const char*)ctx->peer_scratch[j] + (e % 2) * half, dt, i);
    pkf_store(dst, dt, i, sum);
  }
  return 0;
}

}  // namespace

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  if (!rt_slots_init(&g_ep_s, ctx, in, out)) return 9;
  const rt_slots& s = g_ep_s;
  const pkf_dtype dt = out[0].dtype;
  const int64_t slot = rt_slot_of(&s, in[0].data);
  if (slot >= s.ring) return rt_ep_lookahead_run(ctx, in, out, 4);  // a trial (alone)
  if ((int64_t)g_ep_cache.size() < s.ring) g_ep_cache.resize((size_t)s.ring);
  rt_ep_cached& mine = g_ep_cache[(size_t)slot];
  const bool changed =
      mine.valid && memcmp(mine.in.data(), in[0].data, (size_t)s.bytes) != 0;
  if (g_word == nullptr && changed) {
    // First drip call seen (call 1 of its batch): the word and the command.
    g_word = (Word*)(s.base + s.map_size - 4096 + (size_t)ctx->rank * 64);
    g_cmd = FindCmd((slot + s.ring - 1) % s.ring);
    rt_log("drip word at +%lld: released %u returned %u; command %s (count %u)",
           (long long)((char*)g_word - s.base), g_word->released.load(), g_word->returned.load(),
           g_cmd ? "found" : "NOT found", g_cmd ? g_cmd->count : 0);
  }
  // In a drip batch: the command on the stack is a drip command starting at
  // a slot this call belongs to.
  bool drip = false;
  uint32_t k = 0, count = 0;
  if (g_word != nullptr && g_cmd != nullptr && g_cmd->magic == kMagic && g_cmd->op == kOpDrip) {
    k = (uint32_t)((slot - (int64_t)g_cmd->slot + s.ring) % s.ring);
    count = g_cmd->count;
    drip = k < count && g_word->released.load() == k + 1 && g_word->returned.load() == k;
  }
  if (!drip) {
    if (changed) mine.valid = false;
    return rt_ep_lookahead_run(ctx, in, out, 4);
  }
  mine.valid = false;
  if (k == 1 && ++g_drips <= 4)
    rt_log("drip batch %lld: %u calls (%lld wakes so far)", (long long)g_drips, count,
           (long long)g_wakes);
  // Keep the watcher busy for a while first (it waits on `returned`).
  for (const int64_t t0 = rt_ep_now_ns(); rt_ep_now_ns() - t0 < kStormNs;) Storm(g_word);
  const int rc = DripExchange(ctx, slot, dt, (char*)out[0].data);
  if (rc != 0) return rc;
  g_word->returned.store(k + 1, std::memory_order_release);
  if (k + 1 < count)
    while (g_word->released.load(std::memory_order_acquire) <= k + 1 &&
           g_word->released.load(std::memory_order_acquire) != 0x7fffffffu)
      Storm(g_word);
  return 0;
}
