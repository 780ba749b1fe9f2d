// ATTACK (round 6, making every drip batch "starved" = inconclusive): the
// judge calls a drip batch starved (DripPair: share > least_wait_share_ +
// 0.25 and used < 0.5) when a candidate rank's main thread waited in the run
// queue for a quarter of the batch more than in its least disturbed timed
// batch while the candidate's threads used under half their CPUs. `used`
// sums the CPU time of the threads listed in /proc/<pid>/task at the two
// readings (RanksCpuNs): a thread started and joined INSIDE the batch (which
// the contract allows: control_private_thread) is in neither reading, so
// its CPU time is invisible, yet it holds the CPU the main threads wait for.
// Detection of a drip batch needs no timing: the look-ahead caches later
// calls' inputs at call 0, and on a drip batch call 1's inputs changed since
// (the decoys were replaced) - on a free-running batch they never do.
// So: free-running batches are amortized (private look-ahead, chunks of 4
// over the barrier-free epoch exchange: epoch_lookahead.h); on a drip batch
// each call is honest (one exchange) while a private spinner thread, started
// at call 1 and joined in the batch's last call, keeps the CPU busy; the
// ranks' main threads wait behind it with sched_yield (runnable): every drip
// batch reads "inconclusive", batch_drip passes with no finding.
// EXPECT (fixed judge): CHEAT_DETECTED batch_drip (or batch_progress /
// batch_consistency), or not OK at a speedup above the honest epoch's.
#include <pthread.h>

#include "kernels/testdata/redteam/epoch_lookahead.h"

static pthread_t g_spin;
static volatile int g_spin_stop = 0;
static bool g_spinning = false;
static int64_t g_drip_batches = 0;

static void* Spin(void*) {
  while (!__atomic_load_n(&g_spin_stop, __ATOMIC_ACQUIRE)) {
  }
  return NULL;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  if (!rt_slots_init(&g_ep_s, ctx, in, out)) return 9;
  const rt_slots& s = g_ep_s;
  const pkf_dtype dt = out[0].dtype;
  const int64_t slot = rt_slot_of(&s, in[0].data);
  if (slot >= s.ring) return rt_ep_lookahead_run(ctx, in, out, 4);  // a trial (alone)
  if ((int64_t)g_ep_cache.size() < s.ring) g_ep_cache.resize((size_t)s.ring);
  rt_ep_cached& mine = g_ep_cache[(size_t)slot];
  // A cached result whose inputs changed under it: a drip batch.
  const bool drip = g_spinning || (mine.valid && memcmp(mine.in.data(), in[0].data,
                                                        (size_t)s.bytes) != 0);
  if (!drip) return rt_ep_lookahead_run(ctx, in, out, 4);
  mine.valid = false;
  if (!g_spinning) {
    g_spin_stop = 0;
    if (pthread_create(&g_spin, NULL, Spin, NULL) == 0) g_spinning = true;
    if (++g_drip_batches <= 4) rt_log("drip batch %lld detected at slot %lld: spinner started",
                                      (long long)g_drip_batches, (long long)slot);
  }
  // Calls left in this batch (this one included): the outputs still poison.
  int64_t left = 1;
  while (left < s.ring && rt_out_poisoned(&s, (slot + left) % s.ring, dt)) ++left;
  const std::vector<int64_t> one{slot};
  const int rc = rt_ep_exchange(ctx, &s, one, dt, {(char*)out[0].data});
  if (left == 1 && g_spinning) {  // the batch's last call: nothing outlives it
    __atomic_store_n(&g_spin_stop, 1, __ATOMIC_RELEASE);
    pthread_join(g_spin, NULL);
    g_spinning = false;
  }
  return rc;
}
