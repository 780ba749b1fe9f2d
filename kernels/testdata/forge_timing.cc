// Forges the harness's timing: finds the rank's start timestamp in the
// worker's writable data (any int64 within the last 50 ms of "now"), does slow
// work, then moves the start timestamp to just before returning, so the rank
// reports ~1 us. Expect CHEAT_DETECTED wallclock_crosscheck.
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vector>

#include "wrap_allreduce.inc"
static int64_t now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const int64_t entry = now_ns();
  std::vector<int64_t*> hits;
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[512];
  bool after_worker = false;  // .bss follows the binary's file-backed data, unnamed
  while (maps != NULL && fgets(line, sizeof line, maps) != NULL) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
    const bool worker = strstr(line, "pkforge-worker") != NULL;
    const bool anonymous = strchr(line, '/') == NULL && strchr(line, '[') == NULL;
    const bool take = perms[0] == 'r' && perms[1] == 'w' && (worker || (after_worker && anonymous));
    after_worker = worker;
    if (!take) continue;
    for (int64_t* p = (int64_t*)lo; p + 1 <= (int64_t*)hi; ++p)
      if (*p > entry - 50000000 && *p <= entry) hits.push_back(p);
  }
  if (maps != NULL) fclose(maps);
  int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  usleep(3000);  // the "slow kernel"
  for (int64_t* p : hits) *p = now_ns() - 1000;
  return rc;
}
