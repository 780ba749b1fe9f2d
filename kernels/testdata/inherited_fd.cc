// Looks for a descriptor the process that started pkforge-worker left open
// without close-on-exec (the test opens one at fd 777): returns 79 when it
// reached the rank process, otherwise a correct allreduce. A daemon that
// launches the worker directly could leak its sockets or files that way.
#include <fcntl.h>

#include "wrap_allreduce.inc"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (fcntl(777, F_GETFD) != -1) return 79;
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
