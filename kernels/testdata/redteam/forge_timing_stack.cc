// ATTACK (times): patch the rank's own timing state. At the first timed call
// it finds every int64 in the worker's writable data, the anonymous mappings
// and the stack that holds a timestamp from the last 500 us (the batch's start
// time the rank just took); after every timed call (each sleeps 400 us) it
// moves those words to "now", so the rank reports a ~1 us batch.
// EXPECT: CHEAT_DETECTED wallclock_crosscheck.
#include "kernels/testdata/redteam/redteam.h"
static std::vector<volatile int64_t*> g_hits;
static void find(int64_t lo_t, int64_t hi_t) {
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[512];
  while (maps != NULL && fgets(line, sizeof line, maps) != NULL) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
    const bool worker = strstr(line, "pkforge") != NULL;
    const bool anon = strchr(line, '/') == NULL && strstr(line, "[vvar") == NULL &&
                      strstr(line, "[vdso") == NULL && strstr(line, "[vsyscall") == NULL;
    if (perms[0] != 'r' || perms[1] != 'w' || !(worker || anon) || hi - lo > (64ul << 20)) continue;
    for (volatile int64_t* p = (int64_t*)lo; p + 1 <= (int64_t*)hi; ++p)
      if (*p >= lo_t && *p <= hi_t) g_hits.push_back(p);
  }
  if (maps != NULL) fclose(maps);
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const bool batch = rt_batch_call();
  const int64_t entry = rt_now_ns();
  if (batch && g_hits.empty()) {
    find(entry - 500000, entry);
    rt_log("found %zu recent timestamps", g_hits.size());
  }
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  if (batch) {
    usleep(400);
    const int64_t now = rt_now_ns();
    for (volatile int64_t* p : g_hits)
      if (*p > now - 100000000 && *p < now) *p = now - 1000;
  }
  return rt_return(rc);
}
