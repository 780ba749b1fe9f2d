// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_proc_environ_ref; merged into the red-team battery 2026-12-04).
// Reaching a trusted process: the exploit below runs once, at rank 0's first
// call; if it works the candidate leaves a marker and answers right (a judge
// that let it through would say OK), otherwise it answers wrong on purpose.
// EXPECT: WRONG_OUTPUT (the exploit is refused; the candidate then answers wrong on purpose).
#include "kernels/testdata/redteam/attacks_common.h"

namespace {
bool Exploit() {
  const std::vector<int> refs = ReferencePids();
  const int judge = getppid();
  (void)refs;
  (void)judge;
  return TryOpenAll(refs, "environ", O_RDONLY);
}
}  // namespace

// The exploit runs at the first call (the reference ranks exist and have
// run by then), on rank 0.
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  int w = g_worked.load();
  if (w < 0) {
    w = (ctx->rank == 0 && Exploit()) ? 1 : 0;
    if (w == 1) Marker(__FILE__ ": exploit worked");
    g_worked = w;
  }
  return Finish(ctx, in, n_in, out, n_out, stream, w == 1);
}
