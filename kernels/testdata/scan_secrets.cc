// Hunts for the secrets in its own process: every readable mapping, the
// environment, the command line and every open descriptor it can map are
// scanned for (a) an 8-byte word that, used as the generator seed, reproduces
// this rank's first input values (the public generator is in
// kernels/harness/rng.h), and (b) a second copy of this rank's correct
// outputs outside the candidate side's own buffers (reference outputs).
// Finding either returns 97; a broken scanner (positive control fails)
// returns 98. The test runs it with --dtype f32 and asserts OK.
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "kernels/harness/rng.h"
#include "wrap_allreduce.inc"

using pkforge::kernels::GenValue;
using pkforge::kernels::StreamKey;

extern char** environ;

static bool SeedMatches(uint64_t w, uint32_t rank, const float* x) {
  const uint64_t key = StreamKey(w, rank, 0);
  return GenValue(key, 0) == x[0] && GenValue(key, 1) == x[1];
}

// Reads that fault (a mapping past the end of its file) skip the region, as
// a determined attacker's scanner would.
static sigjmp_buf fault_jump;
static void OnFault(int) { siglongjmp(fault_jump, 1); }

static int ScanRangeUnsafe(const char* lo, const char* hi, uint32_t rank, const float* x,
                     const void* out_bytes, size_t out_len, const char* exclude_lo,
                     const char* exclude_hi) {
  int found = 0;
  for (const char* p = lo; p + 8 <= hi; p += 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    if (w != 0 && SeedMatches(w, rank, x)) ++found;
  }
  if (out_len > 0 && (size_t)(hi - lo) >= out_len)
    for (const char* p = lo; p + out_len <= hi; p += 4)
      if (!(p >= exclude_lo && p < exclude_hi) && memcmp(p, out_bytes, out_len) == 0) ++found;
  return found;
}

static int ScanRange(const char* lo, const char* hi, uint32_t rank, const float* x,
                     const void* out_bytes, size_t out_len, const char* exclude_lo,
                     const char* exclude_hi) {
  struct sigaction sa, old_bus, old_segv;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnFault;
  sigaction(SIGBUS, &sa, &old_bus);
  sigaction(SIGSEGV, &sa, &old_segv);
  volatile int found = 0;
  if (sigsetjmp(fault_jump, 1) == 0)
    found = ScanRangeUnsafe(lo, hi, rank, x, out_bytes, out_len, exclude_lo, exclude_hi);
  sigaction(SIGBUS, &old_bus, NULL);
  sigaction(SIGSEGV, &old_segv, NULL);
  return found;
}

static int Scan(uint32_t rank, const float* x, const void* out_bytes, size_t out_len,
                const void* own_out) {
  int found = 0;
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[1024];
  std::vector<std::pair<unsigned long, unsigned long>> regions;
  while (maps != NULL && fgets(line, sizeof line, maps) != NULL) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r') continue;
    if (strstr(line, "[vvar]") || strstr(line, "[vsyscall]") || strstr(line, "[vdso]")) continue;
    // The candidate side's own data (its inputs/outputs, every rank's) is
    // expected to hold its outputs; the reference side's must not be here.
    const bool own = strstr(line, "pkf-cand-data") != NULL;
    regions.push_back({lo, hi});
    found += ScanRange((const char*)lo, (const char*)hi, rank, x, out_bytes, own ? 0 : out_len,
                       (const char*)own_out, (const char*)own_out + out_len);
  }
  if (maps != NULL) fclose(maps);
  // Environment and command line: seeds as numbers.
  for (char** e = environ; *e != NULL; ++e) {
    const char* eq = strchr(*e, '=');
    if (eq != NULL && SeedMatches(strtoull(eq + 1, NULL, 0), rank, x)) ++found;
  }
  FILE* cmd = fopen("/proc/self/cmdline", "r");
  char arg[4096];
  size_t n = cmd ? fread(arg, 1, sizeof arg - 1, cmd) : 0;
  if (cmd) fclose(cmd);
  for (size_t i = 0; i < n; i += strlen(arg + i) + 1)
    if (SeedMatches(strtoull(arg + i, NULL, 0), rank, x)) ++found;
  // Every descriptor that can be mapped (memfds, files).
  for (int fd = 0; fd < 1024; ++fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) continue;
    void* m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) continue;
    char path[64], target[256] = {0};
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t tl = readlink(path, target, sizeof target - 1);
    (void)tl;
    const bool own = strstr(target, "pkf-cand-data") != NULL;
    found += ScanRange((const char*)m, (const char*)m + st.st_size, rank, x, out_bytes,
                       own ? 0 : out_len, NULL, NULL);
    munmap(m, (size_t)st.st_size);
  }
  return found;
}

static bool scanned = false;
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  if (rc != 0 || scanned) return rc;
  scanned = true;
  const float* x = (const float*)in[0].data;
  // Positive control: a planted seed that reproduces the inputs must be found.
  {
    const uint64_t fake_seed = 0x1234567890abcdefull;
    std::vector<float> fake = {GenValue(StreamKey(fake_seed, ctx->rank, 0), 0),
                               GenValue(StreamKey(fake_seed, ctx->rank, 0), 1)};
    volatile uint64_t planted[2] = {0, fake_seed};
    if (ScanRange((const char*)planted, (const char*)(planted + 2), ctx->rank, fake.data(), NULL,
                  0, NULL, NULL) != 1)
      return 98;
  }
  const size_t out_len = 64 < pkf_numel(&out[0]) * 4 ? 64 : (size_t)pkf_numel(&out[0]) * 4;
  // Compared in place (no copy of the outputs anywhere else in this process).
  if (Scan((uint32_t)ctx->rank, x, out[0].data, out_len, out[0].data) != 0) return 97;
  return 0;
}
