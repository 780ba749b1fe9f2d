// ATTACK (round 4, starving the reference from the kernel): a timer-interrupt
// storm on the ranks' CPU while the REFERENCE is timed. Nothing of the
// candidate runs then (frozen), so no check sees it:
// - in pkf_setup rank 0 opens up to 6000 timerfds (its fd limit raised to
//   the hard limit; ~2 us each here, untimed);
// - the judge's ABBA order is fixed (judge.cc Timing: iteration j runs the
//   reference first when (j + warm) is even, so the sequence is R C | C R |
//   R C | ...): after the candidate's 2nd, 4th, 6th ... batch come two
//   reference batches before its next one. At the last call of such a batch
//   (its index and the batch's count read from the harness's Cmd on the
//   stack, chunk_lookahead.h) rank 0 arms its timerfds one-shot, one every
//   ~10 us, starting ~1.2 ms later (once the judge stopped its ranks), over
//   115% of the gap it measured last time (~0.6 us per timerfd_settime,
//   counted in its own batch), and returns; at its next batch it disarms
//   the timers still to come.
// - every expiry is a hardware timer interrupt on the CPU the timers were
//   armed on: the CPU the judge pinned reference rank r and candidate rank r
//   to (judge.cc RankCpus). On this VM an interrupt costs ~10-20 us
//   (measured: 4000 expiries 10 us apart stole ~100% of a spinner's CPU for
//   their 40 ms), and without CONFIG_IRQ_TIME_ACCOUNTING it is charged to the
//   task it interrupted: the reference's schedstat shows it as running.
// pkf_run itself is the naive reference: any speedup above control_naive's
// is forged. Kernel timers of a stopped process keep firing: the freeze
// (SIGSTOP) stops threads, not hrtimers.
// EXPECT (fixed judge): not OK at a speedup above ~1.5x control_naive's
// (RedTeamPending.irq_storm_ref), e.g. the reference's timed batches
// repeated or discarded when its CPU took interrupts the candidate armed, or
// timerfd/timer arming refused to candidate processes.
#include <sys/resource.h>
#include <sys/timerfd.h>

#include "kernels/testdata/redteam/chunk_lookahead.h"

static rt_slots g_s;
static std::vector<int> g_fds;
static int64_t g_batches = 0, g_end_even = 0, g_gap = 12000000, g_armed = 0, g_storms = 0;
static int64_t g_spacing = 10000, g_max_window = 60000000;

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  const char* dir = getenv("PKF_REDTEAM_DIR");
  if (dir != NULL) {  // tuning knobs for measurements: "<spacing ns> <max window ns> <fds>"
    long long sp = 0, win = 0, n = 0;
    FILE* f = fopen((std::string(dir) + "/storm.conf").c_str(), "r");
    if (f != NULL) {
      if (fscanf(f, "%lld %lld %lld", &sp, &win, &n) == 3 && sp > 0) {
        g_spacing = sp;
        g_max_window = win;
      }
      fclose(f);
    }
  }
  rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  const int64_t want = std::min<int64_t>(g_max_window / g_spacing + 1, 6000);
  const int64_t t0 = rt_now_ns();
  for (int64_t i = 0; i < want; ++i) {
    const int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) break;
    g_fds.push_back(fd);
  }
  rt_log("irq_storm: %zu timerfds in %.1f ms (fd limit %lld), spacing %lld ns, window <= %.1f ms",
         g_fds.size(), (rt_now_ns() - t0) / 1e6, (long long)rl.rlim_cur, (long long)g_spacing,
         g_max_window / 1e6);
  return 0;
}

// Latest expiry first: the storm must not start while it is being armed
// (its interrupts would slow the arming down by the whole window).
static std::vector<int64_t> g_expiry;  // per timerfd, 0 = not armed by us
static void Arm(int64_t from, int64_t window) {
  const int64_t n = std::min<int64_t>((int64_t)g_fds.size(), window / g_spacing);
  g_expiry.assign(g_fds.size(), 0);
  for (int64_t i = n - 1; i >= 0; --i) {
    itimerspec it;
    memset(&it, 0, sizeof it);
    const int64_t t = from + i * g_spacing;
    it.it_value.tv_sec = t / 1000000000;
    it.it_value.tv_nsec = t % 1000000000;
    timerfd_settime(g_fds[(size_t)i], TFD_TIMER_ABSTIME, &it, NULL);
    g_expiry[(size_t)i] = t;
  }
  g_armed += n;
}
// At my own next batch: the storm overshoots the gap a little (so the second
// reference batch is surely covered); what is still to come is disarmed.
static int64_t Disarm(int64_t now) {
  int64_t n = 0;
  for (size_t i = 0; i < g_expiry.size(); ++i) {
    if (g_expiry[i] <= now) continue;
    itimerspec it;
    memset(&it, 0, sizeof it);
    timerfd_settime(g_fds[i], 0, &it, NULL);
    g_expiry[i] = 0;
    ++n;
  }
  return n;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  if (ctx->rank != 0 || g_fds.empty() || !rt_slots_init(&g_s, ctx, in, out)) return rc;
  const int64_t slot = rt_slot_of(&g_s, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  if (cmd == NULL || cmd->op != kRtOpBatch || slot >= g_s.ring) return rc;
  const uint32_t k = (uint32_t)((slot - (int64_t)cmd->slot + g_s.ring) % g_s.ring);
  const int64_t now = rt_now_ns();
  if (k == 0 && g_batches % 2 == 0 && g_end_even > 0) {
    g_gap = now - g_end_even;  // two reference batches (and the judge's checks) fit in here
    const int64_t left = Disarm(now);
    if (left > 0 && g_storms % 2 == 1) rt_log("irq_storm: %lld timers disarmed at my batch", (long long)left);
  }
  if (k + 1 != cmd->count) return rc;
  ++g_batches;
  if (g_batches % 2 != 0) return rc;  // my own next batch comes next: no storm
  // A reference batch follows: storm until shortly before my next batch.
  const int64_t window = std::min<int64_t>(g_gap * 115 / 100, g_max_window);
  // Starts once arming is surely done (~0.7 us per timer here) and the judge
  // has stopped my ranks (their stop needs this CPU: a storm then would
  // lengthen my own batch, which ends when every rank is verified stopped).
  Arm(now + 1200000 + window / g_spacing * 1500, window);
  g_end_even = rt_now_ns();
  if (++g_storms % 2 == 1)
    rt_log("irq_storm %lld after batch %lld: %lld timers over %.1f ms (last gap %.1f ms), arming "
           "took %.2f ms; %lld timers so far",
           (long long)g_storms, (long long)g_batches, (long long)(window / g_spacing),
           window / 1e6, g_gap / 1e6, (g_end_even - now) / 1e6, (long long)g_armed);
  return rc;
}
