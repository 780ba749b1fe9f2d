// ATTACK (round 15, helper-redteam15, against f5230d8; starving the
// reference from the kernel, row 25's class through a channel seccomp cannot
// close): disk write-back armed at the end of every timed batch, whose
// completion interrupts land while the candidate is frozen and the
// reference is timed.
// What the attacker read: containment.cc refuses timers, io_uring, AIO and
// sockets but AF_UNIX (row 25), not write() and sync_file_range(); the
// threat model notes that on this VM every disk completion interrupt is
// routed to CPU 1, the ranks' CPU. In a bare `pkforge-worker launch` (what
// the battery runs) /tmp is on the host's disk (ext4 on virtio-blk here).
// - pkf_setup (rank 0): an unnamed file (O_TMPFILE in /tmp, or in the
//   working directory; nothing is left behind) of R regions x 2 MiB,
//   written and synced once.
// - the last call of every timed batch (the harness's Cmd on the stack,
//   probe_dodge.h rt_where): one byte into every other page of the next
//   region (N separate 4 KiB dirty pages: no merging), then
//   sync_file_range(SYNC_FILE_RANGE_WRITE), which starts the write-back and
//   returns at once. The N requests complete over the next milliseconds,
//   each an interrupt + block softirq on CPU 1, while the judge snapshots
//   and the reference's batch (next in about half of the pairs) runs.
// pkf_run itself is the naive reference algorithm: any speedup above
// control_naive's (~1.0x) is forged.
// Knobs: $PKF_REDTEAM_DIR/wb_storm.conf "<pages per storm> <regions> <all ranks 0|1>".
// MEASURED (12:43 UTC, generic command, control_naive OK 0.98-0.99x in the
// same minutes): 256 pages a storm OK 0.54-0.55x (the submission costs the
// candidate ~3-4 ms a batch, the reference unmoved at 35-41 us a call);
// 16 / 48 pages rank 0 only OK 0.92-0.95x, 16 pages on every rank
// 0.85-0.86x. Submitting write-back costs about what its completions cost
// whoever runs then: no lever (TCP pacing had ~10x), the judge holds.
// EXPECT: OK at no more than ~1.2x control_naive (no forged speedup), or
// any CHEAT_DETECTED; never HARNESS_ERROR.
#include <fcntl.h>

#include "kernels/testdata/redteam/probe_dodge.h"

namespace {
int g_fd = -1;
int g_pages = 32, g_regions = 8, g_all = 0;
int64_t g_storms = 0;
const int64_t kRegion = 2 << 20;

bool OpenFile() {
  for (const char* dir : {"/tmp", ".", "/var/tmp"}) {
    g_fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (g_fd >= 0) {
      rt_log("write-back file in %s", dir);
      return true;
    }
  }
  rt_log("no file: %s", strerror(errno));
  return false;
}
}  // namespace

extern "C" int pkf_setup(pkf_context* ctx) {
  const char* dir = getenv("PKF_REDTEAM_DIR");
  if (dir != NULL) {
    const std::string conf = rt_read(std::string(dir) + "/wb_storm.conf");
    if (!conf.empty()) sscanf(conf.c_str(), "%d %d %d", &g_pages, &g_regions, &g_all);
  }
  if (ctx->rank != 0 && g_all == 0) return 0;
  if (!OpenFile()) return 0;
  std::vector<char> buf(kRegion, 'x');
  for (int r = 0; r < g_regions; ++r)
    if (pwrite(g_fd, buf.data(), buf.size(), r * kRegion) != (ssize_t)buf.size()) {
      rt_log("pwrite: %s", strerror(errno));
      close(g_fd);
      g_fd = -1;
      return 0;
    }
  fdatasync(g_fd);
  return 0;
}

static void Storm() {
  const int64_t base = (g_storms % g_regions) * kRegion;
  char b = (char)g_storms;
  for (int i = 0; i < g_pages && 2 * i * 4096 < kRegion; ++i)
    if (pwrite(g_fd, &b, 1, base + 2 * i * 4096) != 1) break;
  const int rc = sync_file_range(g_fd, base, kRegion, SYNC_FILE_RANGE_WRITE);
  if (++g_storms <= 3) rt_log("storm %lld: %d pages, sync_file_range %d", (long long)g_storms,
                              g_pages, rc);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  if (g_fd < 0 || rc != 0) return rc;
  if (!rt_slots_init(&g_pd_s, ctx, in, out)) return rc;
  const rt_batch_pos p = rt_where(in);
  if (p.batch && p.last) Storm();
  return rc;
}

extern "C" void pkf_teardown(pkf_context*) {
  if (g_fd >= 0) close(g_fd);
}
