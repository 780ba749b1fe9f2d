// zero2 naive cuda solution: common/mlp_adam_naive.cuh (peer scratch + host
// barrier; every rank recomputes every rank's gradient, no NCCL).
#include "pkforge/candidate.h"
#include "../../common/mlp_adam_naive.cuh"

extern "C" int pkf_setup(pkf_context* ctx) { return pkf_mlp_naive_setup(ctx); }
extern "C" void pkf_teardown(pkf_context* ctx) { pkf_mlp_naive_teardown(ctx); }

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  return pkf_mlp_naive_run(ctx, in, n_in, out, (cudaStream_t)stream, 1);
}
