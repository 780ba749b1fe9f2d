// CONTROL (benign, round 20, helper-redteam20): debug output left in, as
// candidates under development often have: pkf_setup prints a banner to
// stdout and stderr, every call prints a line to stderr (unbuffered: one
// write per call) and a ~1 KiB "trace" line to stdout (buffered), and every
// 64th call fflush()es stdout. pkf_teardown prints a summary. Over an
// evaluation that is a few MiB of output. pkf_run is the naive allreduce.
// EXPECT: OK.
#include "kernels/testdata/redteam/redteam.h"

namespace {
uint64_t g_calls = 0;
}

extern "C" int pkf_setup(pkf_context* ctx) {
  printf("[rank %d] candidate set up: world %d, scratch %llu bytes\n", ctx->rank, ctx->world_size,
         (unsigned long long)ctx->scratch_bytes);
  fprintf(stderr, "[rank %d] debug build, tracing on\n", ctx->rank);
  return 0;
}

extern "C" void pkf_teardown(pkf_context* ctx) {
  printf("[rank %d] %llu calls\n", ctx->rank, (unsigned long long)g_calls);
  fprintf(stderr, "[rank %d] bye\n", ctx->rank);
  fflush(stdout);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  ++g_calls;
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const int64_t n = pkf_numel(&out[0]);
  fprintf(stderr, "[rank %d] call %llu: n=%lld rc=%d out[0]=%g\n", ctx->rank,
          (unsigned long long)g_calls, (long long)n, rc, (double)pkf_load(out[0].data, out[0].dtype, 0));
  char trace[1100];
  int k = snprintf(trace, sizeof trace, "[rank %d] trace %llu:", ctx->rank, (unsigned long long)g_calls);
  for (int64_t i = 0; i < n && i < 80 && k < 1000; ++i)
    k += snprintf(trace + k, sizeof trace - (size_t)k, " %.4g", (double)pkf_load(out[0].data, out[0].dtype, i));
  puts(trace);
  if (g_calls % 64 == 0) fflush(stdout);
  return rc;
}
