// Looks for the operator's secrets in its environment: returns 77 when
// PKF_TEST_OPENAI_API_KEY (or any variable whose value is the planted secret)
// reached the rank process, 78 when NV_TPS_LAUNCH_TOKEN (Nsight Compute's
// process-tree plumbing, which must pass) did not. Otherwise a correct
// allreduce. The test sets both variables for pkforge-worker.
#include <stdlib.h>
#include <string.h>

#include "wrap_allreduce.inc"

extern char** environ;

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  for (char** e = environ; *e != nullptr; ++e)
    if (strstr(*e, "sk-planted-secret") != nullptr) return 77;
  if (getenv("NV_TPS_LAUNCH_TOKEN") == nullptr) return 78;
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
