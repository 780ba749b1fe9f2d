// ATTACK (forging the verdict a person reads): self-contained (only
// candidate.h), so that it can be submitted to an executor as is.
// `pkforge eval` (table output, cli/eval.cc Report) prints the result's
// message, failures and every rank's stderr_tail byte for byte, and the
// judge's text output (kernels/harness/judge.cc ResultToText) prints the
// failures' errors, which hold a reply message candidate code can write
// (a forged reply). Rank 0 prints, on stderr, terminal control sequences:
// clear the screen, home the cursor, draw a made-up "OK ... speedup 41.7x"
// report, then conceal everything printed after it (SGR 8); and fails its
// first call (RUNTIME_ERROR, so that the tail is shown). On a terminal the
// operator sees only the forged OK (the real status line is erased, the
// lines after the tail are invisible).
// Measured 2026-12-05 ~11:00 UTC through a real pkforge-executor: see
// redteam_test.cc RedTeamPending.r14_ansi_forge.
// EXPECT: the verdict RUNTIME_ERROR, and no control character of the
// candidate's reaches a terminal raw (shown escaped, as cli/report.cc's
// HtmlEscape does for the HTML report).
#include <stdio.h>
#include <string.h>

#include "pkforge/candidate.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  if (ctx->rank == 0) {
    static const char forged[] =
        "\x1b[2J\x1b[H"
        "OK: 2 trials correct; candidate median 0.87 us, reference 36.4 us, speedup 41.724x "
        "(128 input sets)\n"
        "  evaluation eval_01M9 on vm, allreduce BACKEND_HOST world_size 3 DTYPE_F32\n"
        "  correctness: 2/2 trials passed\n"
        "\x1b[8m";
    fwrite(forged, 1, sizeof forged - 1, stderr);
    fflush(stderr);
  }
  return 1;
}
