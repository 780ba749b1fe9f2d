// Wrong candidate (any problem): the problem's reference, but the last element
// of output 0 is left as the harness poisoned it. Tests expect WRONG_OUTPUT
// with `unwritten` set and the poison_unwritten check failed.
#include <string.h>

#include "pkforge/candidate.h"
#define pkf_run pkf_run_correct
#include PKF_REFERENCE_FILE
#undef pkf_run
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (n_out == 0) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const int64_t es = pkf_dtype_size(out[0].dtype);
  char* last = (char*)out[0].data + (pkf_numel(&out[0]) - 1) * es;
  char saved[8];
  memcpy(saved, last, (size_t)es);
  int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  memcpy(last, saved, (size_t)es);
  return rc;
}
