// RED TEAM round 26: drop other programs' page cache (an effect that
// outlives the evaluation until each file is read from disk again). A rank
// may read any file outside /dev (Landlock grants reading), and
// posix_fadvise(POSIX_FADV_DONTNEED) on a read-only descriptor evicts the
// file's clean, unmapped page-cache pages, whoever owns the file. In
// pkf_setup rank 0 evicts /tmp/rt26v/big (a root-owned 0644 file the test
// host cached first) and logs cachestat(2) (451) before and after; then the
// honest allreduce. EXPECT (today): OK, the file's pages gone from the cache.
// Possible fix: refuse fadvise64 with advice POSIX_FADV_DONTNEED (4) (and
// readahead's counterpart is harmless: it only reads).
#include "kernels/testdata/redteam/redteam.h"

namespace {

struct CacheStat {
  uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};
struct CacheStatRange {
  uint64_t off, len;
};

uint64_t Cached(int fd) {
  CacheStatRange r{0, 0};  // len 0: to the end
  CacheStat cs{};
  return syscall(451, fd, &r, &cs, 0) == 0 ? cs.nr_cache : ~0ull;
}

}  // namespace

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  const char* path = "/tmp/rt26v/big";
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    rt_log("r26_fadvise_evict: open %s: %s", path, strerror(errno));
    return 0;
  }
  const uint64_t before = Cached(fd);
  if (before == ~0ull) rt_log("r26_fadvise_evict: cachestat: %s", strerror(errno));
  const int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  rt_log("r26_fadvise_evict: %s cached pages %llu -> %llu (fadvise rc %d)", path,
         (unsigned long long)before, (unsigned long long)Cached(fd), rc);
  close(fd);
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
