// Correct, but calls sched_yield(); run with --forbid sched_yield the static
// scan must flag it (flag only: the result stays OK).
#include <sched.h>

#include "wrap_allreduce.inc"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  sched_yield();
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
