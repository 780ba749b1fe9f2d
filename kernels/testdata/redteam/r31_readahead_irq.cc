// ATTACK (starving the reference with kernel work that outlives the stop,
// red team round 31): rows 25 and 43 closed timers, TCP pacing, unix GC,
// writeback and fadvise(DONTNEED), but not asynchronous READ-ahead.
// readahead(2) (and MADV_WILLNEED / fadvise WILLNEED) on a large readable,
// uncached file (Landlock lets ranks read outside /dev) submits block I/O and
// returns at once; the completions (virtio-blk interrupts, bio end_io, page
// cache insertion) come later. On this VM every block completion interrupt
// is routed to CPU 1 (/proc/interrupts virtio1-req.0), which
// rank_pool_start.cc RankCpus (l.82-94) makes the CPU of every rank of both
// sides (2 CPUs: skip the first, all ranks on the second). Issued at calls
// 31, 63, 95, 127 of each timed batch (128 calls at world 3, tiny), the last
// one's completions land in whatever runs next on CPU 1: in half of the
// pairs (judge_timing.cc l.156, secret order) the reference's timed batch.
// The work itself is the naive allreduce (control_naive), so any speedup
// above the control's ~1.0x is forged.
// Read: judge_timing.cc TimedPair (l.540-600), rank_pool.cc RefTimedRound
// (l.480-528), containment.cc l.505-515 (fadvise64 refuses DONTNEED only; no
// rule names readahead).
// Predicted: OK at ~1.0x (the caller pays the page allocation, the
// completion work is smaller than the submission: no amplification) -- a
// measurement, not a gated attack.
// EXPECT (defended): OK within noise of control_naive (no forged gain), or
// readahead refused.
#include <fcntl.h>
#include <unistd.h>

#include "kernels/testdata/redteam/redteam.h"

static int g_fd = -1;
static off_t g_off = 0;
static off_t g_size = 0;
static int g_calls = 0;

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  const char* files[] = {"/usr/local/cuda-13.0/lib/libcublasLt.so.13",
                         "/usr/local/cuda-13.0/lib/libcudnn_engines_precompiled.so.9",
                         "/usr/lib/chromium/chromium"};
  const char* pick = getenv("PKFORGE_R31_FILE");
  for (const char* f : files) {
    g_fd = open(pick != nullptr ? pick : f, O_RDONLY | O_CLOEXEC);
    if (g_fd >= 0) break;
  }
  if (g_fd < 0) {
    rt_log("r31_readahead_irq: no file (errno %d)", errno);
    return 0;
  }
  g_size = lseek(g_fd, 0, SEEK_END);
  // A random start so repeated launches touch other parts of the file.
  g_off = static_cast<off_t>((rt_now_ns() / 1000) % (g_size / 2)) & ~static_cast<off_t>(4095);
  rt_log("r31_readahead_irq: file size %lld start %lld", (long long)g_size, (long long)g_off);
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const bool timed = rt_batch_call();
  if (rt_batch_first()) g_calls = 0;
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  ++g_calls;
  if (timed && ctx->rank == 0 && g_fd >= 0 && g_calls % 32 == 0) {
    const size_t len = 1 << 20;
    if (g_off + static_cast<off_t>(len) > g_size) g_off = 0;
    const ssize_t r = readahead(g_fd, g_off, len);
    static int logged = 0;
    if (logged++ < 2) rt_log("r31_readahead_irq: readahead rc %zd errno %d", r, errno);
    g_off += len;
  }
  return rt_return(rc);
}
