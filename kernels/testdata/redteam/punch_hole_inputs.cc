// ATTACK (memory the kernel changes later, no store instruction): after a
// timed call has read its inputs, the candidate frees them from the shared
// data memfd (fd 7) with fallocate(PUNCH_HOLE) (allowed: the segment is
// sealed only against shrink/grow). The pages read back as zeros: the inputs
// are changed without any write the candidate's code performs (a scratch
// trick that would save restoring them, or a way to hide input mutation from
// a check that watches for stores).
// EXPECT: CHEAT_DETECTED input_mutation (the inputs are compared byte-wise
// after every checked call).
#include <fcntl.h>

#include "kernels/testdata/redteam/redteam.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const bool batch = rt_batch_call();
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  static char* base = NULL;
  static size_t size = 0;
  if (base == NULL) rt_mapping_of(in[0].data, &base, &size);  // this rank's data segment (fd 7)
  if (batch && base != NULL) {
    // Whole pages inside this rank's input only.
    const int64_t off = (char*)in[0].data - base, len = pkf_numel(&in[0]) * 4;
    const int64_t lo = (off + 4095) & ~4095LL, hi = (off + len) & ~4095LL;
    int r = -2;
    if (hi > lo) r = fallocate(7, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, lo, hi - lo);
    else r = fallocate(7, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off & ~4095LL, 4096);
    static bool logged = false;
    if (!logged) rt_log("punch hole over the input page(s): %d (%s)", r, r ? strerror(errno) : "ok");
    logged = true;
  }
  return rt_return(rc);
}
