// ATTACK (reaching a peer's data through /proc; forged speedup). Host ranks
// map only their own data segment since direct_peer_read (a rank read every
// peer's inputs of a whole batch from one shared segment and needed no
// synchronization). But every candidate rank holds its segment's memfd as
// fd 7, and its peers run under the same uid: /proc/<peer rank>/fd/7 opens
// the peer's segment unless the peer is non-dumpable (a uid change makes a
// process non-dumpable: as root the ranks drop to 65534 and this fails; a
// non-root launch, e.g. inside the executor's sandbox, changes no uid).
// After one honest call (its barriers publish every rank's pid and input
// offset in the signal pads) each rank maps its peers' segments read-only and
// sums their inputs straight from them, with no barrier at all: every input
// of a batch exists before the batch starts. Bitwise the reference's result.
// Gated: outputs are written only when every rank mapped all its peers.
// EXPECT: WRONG_OUTPUT (blocked). OK means the attack worked (forged speedup).
#include <sys/prctl.h>

#include "kernels/testdata/redteam/redteam.h"

static char* g_base = NULL;
static size_t g_size = 0;
static const char* g_peer[64];
static int64_t g_peer_in[64];
static int64_t g_first_in = -1;
static int g_state = 0;  // 0 first call, 1 worked everywhere, 2 blocked

static bool MapPeers(pkf_context* ctx) {
  for (int32_t j = 0; j < ctx->world_size && j < 64; ++j) {
    g_peer_in[j] = ((volatile uint32_t*)ctx->peer_flags[j])[1];
    if (j == ctx->rank) {
      g_peer[j] = g_base;
      continue;
    }
    const int pid = (int)((volatile uint32_t*)ctx->peer_flags[j])[2];
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/7", pid);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      struct stat st;
      char dir[64];
      snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
      const int sr = stat(dir, &st);
      rt_log("open %s: %s (uid %d, dumpable %d; %s owned by %d mode %o)", path, strerror(errno),
             (int)getuid(), prctl(PR_GET_DUMPABLE), dir, sr == 0 ? (int)st.st_uid : -1,
             sr == 0 ? (unsigned)st.st_mode & 0777u : 0u);
      return false;
    }
    void* p = mmap(NULL, g_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
      rt_log("mmap of %s: %s", path, strerror(errno));
      return false;
    }
    g_peer[j] = (const char*)p;
    rt_log("mapped rank %d's data segment through %s", j, path);
  }
  return true;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (g_state == 0) {
    rt_mapping_of(in[0].data, &g_base, &g_size);
    g_first_in = (char*)in[0].data - g_base;
    volatile uint32_t* mine = ctx->peer_flags[ctx->rank];
    mine[1] = (uint32_t)g_first_in;
    mine[2] = (uint32_t)getpid();
    const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // publishes (barriers)
    if (rc != 0) return rc;
    const bool worked = MapPeers(ctx);
    mine[3] = worked ? 2u : 1u;
    if (ctx->barrier(ctx) != 0) return 5;
    bool all = true;
    for (int32_t j = 0; j < ctx->world_size; ++j)
      all = all && ((volatile uint32_t*)ctx->peer_flags[j])[3] == 2u;
    g_state = all ? 1 : 2;
    rt_log("peer segments through /proc: %s", all ? "WORKED on every rank" : "blocked");
    return 0;
  }
  if (g_state == 2) return 0;  // blocked: outputs stay poison
  const int64_t shift = ((char*)in[0].data - g_base) - g_first_in;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&out[0]);
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j) s += pkf_load(g_peer[j] + g_peer_in[j] + shift, dt, i);
    pkf_store(out[0].data, dt, i, s);
  }
  return 0;
}
