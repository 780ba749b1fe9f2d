// Wrong candidate (any problem): the problem's reference, then output 0,
// element numel/2 is increased by 0.5 (integer outputs: by 1) on one rank: rank world-1, or rank 0 for
// root-only problems (PKF_ROOT_ONLY). Tests expect WRONG_OUTPUT naming that
// rank and index.
#include "pkforge/candidate.h"
#define pkf_run pkf_run_correct
#include PKF_REFERENCE_FILE
#undef pkf_run
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  if (rc != 0 || n_out == 0) return rc;
  // Root-only outputs (reduce, gather) exist on rank 0 alone.
  const bool target = ctx->world_size == 1 || ctx->rank == ctx->world_size - 1 ||
                      (ctx->rank == 0 && out[0].shape[0] != 0 && ctx->world_size > 1 &&
                       PKF_ROOT_ONLY);
  if (!target) return 0;
  const int64_t i = pkf_numel(&out[0]) / 2;
  if (out[0].dtype == PKF_I64) {  // integer outputs (ids, counts): off by one
    ((int64_t*)out[0].data)[i] += 1;
  } else if (out[0].dtype == PKF_I32) {
    ((int32_t*)out[0].data)[i] += 1;
  } else {
    pkf_store(out[0].data, out[0].dtype, i, pkf_load(out[0].data, out[0].dtype, i) + 0.5f);
  }
  return 0;
}
