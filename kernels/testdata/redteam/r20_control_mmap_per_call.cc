// CONTROL (benign, round 20, helper-redteam20): large private scratch
// mapped and unmapped in every call, as a kernel with a per-call workspace
// allocator that returns memory to the OS does: each call mmaps a
// workspace of max(1 MiB, the output's size) (PKFORGE_R20_MMAP_KIB changes
// the minimum) with MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE, asks for huge pages
// (MADV_HUGEPAGE), accumulates the sum there in f32, copies it to the
// output, drops the pages (MADV_DONTNEED) and munmaps. The exchange is the
// reference's (publish, ctx->barrier, sum, ctx->barrier).
// EXPECT: OK (slower than the reference; 8 MiB: ~200x slower, TIMEOUT at --timeout 10).
#include "kernels/testdata/redteam/redteam.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t, void*) {
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&out[0]);
  static const size_t min_len = [] {
    const char* v = getenv("PKFORGE_R20_MMAP_KIB");
    return (size_t)(v != nullptr ? atoll(v) : 1024) << 10;
  }();
  const size_t len = std::max<size_t>(min_len, ((size_t)n * 4 + 4095) / 4096 * 4096);
  float* acc = (float*)mmap(nullptr, len, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (acc == MAP_FAILED) return 7;
  madvise(acc, len, MADV_HUGEPAGE);
  for (int64_t i = 0; i < n; ++i) acc[i] = 0.0f;
  for (int32_t j = 0; j < ctx->world_size; ++j)
    for (int64_t i = 0; i < n; ++i) acc[i] += pkf_load(peer[j][0], dt, i);
  for (int64_t i = 0; i < n; ++i) pkf_store(out[0].data, dt, i, acc[i]);
  madvise(acc, len, MADV_DONTNEED);
  munmap(acc, len);
  return ctx->barrier(ctx);
}
