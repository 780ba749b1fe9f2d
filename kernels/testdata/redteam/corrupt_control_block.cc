// ATTACK (blame): after a correct first call, rank 0 maps its side's control
// block (fd 5) and fills it with garbage (barrier counters, world, the
// in_barrier/in_run flags the judge reads for its deadlock diagnostics, the
// cuda mailboxes), then enters the barrier alone: the candidate side hangs,
// and the judge's diagnostics read nonsense.
// EXPECT: TIMEOUT (or another candidate fault; never HARNESS_ERROR, never a
// crash of the judge).
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (++calls == 1 || ctx->rank != 0) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  struct stat st;
  if (fstat(5, &st) == 0 && st.st_size > 0) {
    void* m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, 5, 0);
    if (m != MAP_FAILED) memset(m, 0xff, (size_t)st.st_size);
  }
  for (;;) ctx->barrier(ctx);
}
