// ATTACK (round 19, helper-redteam19): starve the reference with kernel work
// that the candidate queues for LATER, in a kworker, through the unix-socket
// garbage collector. No timer, no socket to anyone: one
// socketpair(AF_UNIX, SOCK_STREAM) (allowed) and SCM_RIGHTS.
// - pkf_setup (untimed): rank 0 creates memfds of kChunkMiB each and fills
//   them with fallocate (the pages are allocated now, outside every clock),
//   and measures what freeing 1 MiB of shmem costs here (a synchronous close
//   of a filled memfd).
// - At the last call of each of its timed batches, rank 0 builds a garbage
//   cycle: socketpair(a, b); sendmsg(a, SCM_RIGHTS {b, memfd x k}) puts b
//   itself and k memfds into b's own receive queue; close(b), close(memfds),
//   close(a). b is now referenced only from its own queue, so only the
//   garbage collector can free it: unix_release_sock(a) queues unix_gc_work
//   on system_unbound_wq, the kworker purges b's queue and drops the last
//   reference to each memfd from a kernel thread, which defers the final
//   fput (delayed_fput_work, one jiffy later), which truncates k x kChunkMiB
//   of shmem: ~130 us per MiB of kernel time on one of the ranks' CPUs,
//   starting ~1-2 ms after the candidate's call returned (it pays ~20 us),
//   i.e. while it is frozen and the reference is timed. Nothing of the
//   candidate runs then; the kworker is nobody's CPU time the judge counts.
//   k is sized to ~1.3x the candidate's own batch span (the reference runs
//   the same naive algorithm, so its batch is as long).
// - After a candidate batch the next batch is the reference's 3 times in 4
//   (ABBA with a secret order per pair), so the reference's median moves and
//   the candidate's does not.
// pkf_run itself is the naive reference: any speedup above control_naive's is
// forged.
// MEASURED (2026-12-05, 2 CPUs, ranks on CPU 1): OK 0.96-1.00x in 12 of 12
// against control_naive 0.99-1.01x: held. The collector's kworker is unbound
// and the delayed fput runs where it ran: on the idle CPU 0, not on the
// reference's CPU (also with a `yes` on CPU 0). Predicted to matter only where
// every other CPU is busy.
// EXPECT (fixed judge): not OK above ~1.3x control_naive's; with sendmsg
// refused on host ranks (round 19 finding 1), SCM_RIGHTS fails and Storm()
// hands nothing to the collector.
#include <sys/resource.h>
#include <sys/socket.h>

#include "kernels/testdata/redteam/chunk_lookahead.h"

static const int64_t kChunkMiB = 8;
static std::vector<int> g_free;     // filled memfds not yet released
static double g_ns_per_mib = 130000;
static rt_slots g_s;
static int64_t g_batch_start = 0, g_released_mib = 0, g_storms = 0;

static int rt_filled_memfd(int64_t mib) {
  const int fd = (int)syscall(SYS_memfd_create, "r19", 0);
  if (fd < 0) return -1;
  if (fallocate(fd, 0, 0, mib << 20) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  // Calibration: a synchronous free of 32 MiB.
  const int c = rt_filled_memfd(32);
  if (c >= 0) {
    const int64_t t0 = rt_now_ns();
    close(c);
    g_ns_per_mib = std::max<double>(20000, (rt_now_ns() - t0) / 32.0);
  }
  const char* env = getenv("PKFORGE_R19_STORM_MIB");
  const int64_t total = env != NULL ? atoll(env) : 2048;
  for (int64_t m = 0; m + kChunkMiB <= total; m += kChunkMiB) {
    const int fd = rt_filled_memfd(kChunkMiB);
    if (fd < 0) break;
    g_free.push_back(fd);
  }
  rt_log("gc_free_storm: %zu memfds of %lld MiB filled in setup; freeing costs %.0f us per MiB",
         g_free.size(), (long long)kChunkMiB, g_ns_per_mib / 1e3);
  return 0;
}

// Hands k memfds to the unix garbage collector; returns how many went.
static int Storm(int k) {
  k = std::min(k, (int)std::min<size_t>(g_free.size(), 200));
  if (k <= 0) return 0;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 0;
  std::vector<int> fds = {sv[1]};
  for (int i = 0; i < k; ++i) fds.push_back(g_free[g_free.size() - 1 - (size_t)i]);
  std::vector<char> buf(CMSG_SPACE(sizeof(int) * fds.size()), 0);
  char x = 'x';
  struct iovec io = {&x, 1};
  struct msghdr m = {};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = buf.data();
  m.msg_controllen = buf.size();
  struct cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  const bool sent = sendmsg(sv[0], &m, 0) == 1;
  if (!sent) {
    static int logged = 0;
    if (logged++ == 0) rt_log("gc_free_storm: sendmsg SCM_RIGHTS: %s", strerror(errno));
  }
  close(sv[1]);
  if (sent)
    for (int i = 0; i < k; ++i) {
      close(g_free.back());
      g_free.pop_back();
    }
  close(sv[0]);  // released: the collector finds b (and the memfds) garbage
  return sent ? k : 0;
}

// Which batches a reference batch follows (irq_storm.h's rule, without the
// judge's order): a batch that started a short gap after my previous one
// (only the judge's own work in between) ran FIRST in its pair, so the
// reference's batch comes next. PKFORGE_R19_STORM_ALWAYS=1: after every batch.
static int64_t g_last_end = 0, g_gap_before = 0, g_max_gap = 0, g_batches = 0;

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  if (ctx->rank != 0 || g_free.empty() || !rt_slots_init(&g_s, ctx, in, out)) return rc;
  const int64_t slot = rt_slot_of(&g_s, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  const int64_t now = rt_now_ns();
  if (cmd == NULL || cmd->op != kRtOpBatch || slot >= g_s.ring) {
    g_last_end = now;
    return rc;
  }
  const uint32_t k = (uint32_t)((slot - (int64_t)cmd->slot + g_s.ring) % g_s.ring);
  if (k == 0) {
    g_batch_start = now;
    g_gap_before = g_last_end > 0 ? now - g_last_end : 0;
    if (g_batches >= 1) g_max_gap = std::max(g_max_gap, g_gap_before);
  }
  if (k + 1 != cmd->count || g_batch_start == 0) return rc;
  ++g_batches;
  g_last_end = now;
  const bool always = getenv("PKFORGE_R19_STORM_ALWAYS") != NULL;
  if (!always && (g_batches < 2 || g_max_gap == 0 || g_gap_before * 2 > g_max_gap)) return rc;
  const char* f = getenv("PKFORGE_R19_STORM_FACTOR");
  const double factor = f != NULL ? atof(f) : 1.0;
  // As long as the longest gap between two of my batches (a reference batch
  // and the judge's work around it), or 1.3x my own batch when none yet.
  const double want_ns =
      factor * (g_max_gap > 0 ? (double)g_max_gap : 1.3 * (double)(now - g_batch_start));
  const int chunks = (int)(want_ns / (g_ns_per_mib * kChunkMiB) + 0.999);
  const int sent = Storm(chunks);
  g_released_mib += sent * kChunkMiB;
  g_last_end = rt_now_ns();
  if (++g_storms % 4 == 1)
    rt_log("gc_free_storm %lld after batch %lld (%u calls, %.2f ms; gap before %.2f ms, longest "
           "%.2f ms): %d x %lld MiB to the collector (%.2f ms of kernel work), %lld MiB so far, "
           "%zu chunks left",
           (long long)g_storms, (long long)g_batches, cmd->count, (now - g_batch_start) / 1e6,
           g_gap_before / 1e6, g_max_gap / 1e6, sent, (long long)kChunkMiB,
           sent * kChunkMiB * g_ns_per_mib / 1e6, (long long)g_released_mib, g_free.size());
  return rc;
}
